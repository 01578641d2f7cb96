// Command crossings counts the calls and package crossings on the path of one answer: the functions of
// the given layer packages reachable (call graph, VTA) from the entry function that ran (a coverage
// profile), and every call from them that ran to a runwatch or slack-go function, marked X when it crosses
// a package. scripts/crossings.sh runs it over an "ETA?" mention; docs/architecture.md quotes it. It is a
// module of its own so that runwatch does not depend on golang.org/x/tools.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

type block struct {
	file              string
	sl, sc, el, ec, n int
}

func main() {
	dir := flag.String("dir", ".", "module checkout")
	cover := flag.String("cover", "", "coverage profile")
	entry := flag.String("entry", "", "entry function, as ssa names it")
	layers := flag.String("layers", "", "comma-separated import paths traversed")
	modpath := flag.String("mod", "runwatch", "module path")
	flag.Parse()
	layer := map[string]bool{}
	for _, l := range strings.Split(*layers, ",") {
		layer[l] = true
	}
	// coverage
	covered := map[string][]block{} // file path (import path form) -> executed blocks
	f, err := os.Open(*cover)
	if err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		sp := strings.Fields(line)
		cnt, _ := strconv.Atoi(sp[2])
		if cnt == 0 {
			continue
		}
		fileRange := sp[0]
		i := strings.LastIndex(fileRange, ":")
		file, rng := fileRange[:i], fileRange[i+1:]
		var b block
		fmt.Sscanf(rng, "%d.%d,%d.%d", &b.sl, &b.sc, &b.el, &b.ec)
		b.file, b.n = file, cnt
		covered[file] = append(covered[file], b)
	}
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Dir: *dir, Tests: true}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		panic(err)
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	fns := ssautil.AllFunctions(prog)
	cg := vta.CallGraph(fns, cha.CallGraph(prog))
	cg.DeleteSyntheticNodes()
	fset := prog.Fset
	// map a filename to its import-path form used by the profile
	abs2imp := func(fn *ssa.Function) string {
		if fn.Pkg == nil && fn.Origin() != nil {
			fn = fn.Origin()
		}
		pos := fset.Position(fn.Pos())
		if fn.Pkg == nil || !pos.IsValid() {
			return ""
		}
		return fn.Pkg.Pkg.Path() + "/" + pos.Filename[strings.LastIndex(pos.Filename, "/")+1:]
	}
	executed := func(fn *ssa.Function) bool {
		if fn.Pkg == nil && fn.Origin() != nil {
			fn = fn.Origin()
		}
		syn := fn.Syntax()
		if syn == nil {
			return false
		}
		file := abs2imp(fn)
		start, end := fset.Position(syn.Pos()), fset.Position(syn.End())
		for _, b := range covered[file] {
			if (b.sl > start.Line || b.sl == start.Line && b.sc >= start.Column) && (b.el < end.Line || b.el == end.Line && b.ec <= end.Column) {
				return true
			}
		}
		return false
	}
	pkgOf := func(fn *ssa.Function) string {
		if fn.Pkg != nil {
			return fn.Pkg.Pkg.Path()
		}
		if fn.Origin() != nil && fn.Origin().Pkg != nil {
			return fn.Origin().Pkg.Pkg.Path()
		}
		return ""
	}
	var start *ssa.Function
	for fn := range fns {
		if fn.String() == *entry {
			start = fn
		}
	}
	if start == nil {
		panic("no entry " + *entry)
	}
	seen := map[*ssa.Function]bool{start: true}
	queue := []*ssa.Function{start}
	type edge struct{ from, to string }
	calls := map[edge]bool{}
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		node := cg.Nodes[fn]
		if node == nil {
			continue
		}
		for _, e := range node.Out {
			callee := e.Callee.Func
			p := pkgOf(callee)
			ours := strings.HasPrefix(p, *modpath+"/") || strings.HasPrefix(p, "github.com/slack-go/")
			if !ours {
				continue
			}
			if strings.HasPrefix(p, *modpath+"/") && !executed(callee) {
				continue
			}
			// the call site itself ran
			if !siteExecuted(e, fset, covered, abs2imp(fn)) {
				continue
			}
			calls[edge{name(fn), name(callee)}] = true
			if layer[p] && !seen[callee] {
				seen[callee] = true
				queue = append(queue, callee)
			}
		}
	}
	var list []string
	cross := 0
	xpk := map[string]int{}
	for e := range calls {
		fp, tp := pkgName(e.from), pkgName(e.to)
		mark := "  "
		if fp != tp {
			mark = "X "
			cross++
			xpk[fp+" -> "+tp]++
		}
		list = append(list, mark+e.from+" -> "+e.to)
	}
	sort.Strings(list)
	for _, l := range list {
		fmt.Println(l)
	}
	fmt.Printf("\ncalls on the path: %d; crossing a package: %d\n", len(calls), cross)
	var ks []string
	for k := range xpk {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		fmt.Printf("  %3d  %s\n", xpk[k], k)
	}
}

func siteExecuted(e *callgraph.Edge, fset *token.FileSet, covered map[string][]block, file string) bool {
	pos := fset.Position(e.Pos())
	if !pos.IsValid() {
		return true
	}
	for _, b := range covered[file] {
		if (b.sl < pos.Line || b.sl == pos.Line && b.sc <= pos.Column) && (b.el > pos.Line || b.el == pos.Line && b.ec >= pos.Column) {
			return true
		}
	}
	return false
}

func name(fn *ssa.Function) string {
	s := fn.String()
	return strings.ReplaceAll(s, "runwatch/", "")
}

func pkgName(s string) string {
	s = strings.TrimPrefix(s, "(")
	s = strings.TrimPrefix(s, "*")
	if i := strings.Index(s, "."); i > 0 {
		rest := s[:i]
		// github.com/slack-go/slack.x
		if strings.HasPrefix(s, "github.com/") {
			j := strings.Index(s[len("github.com/"):], ".")
			return s[:len("github.com/")+j]
		}
		return rest
	}
	return s
}
