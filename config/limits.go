package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Run-file limits. A run file is a page of YAML; these bound what a mistaken or hostile one can
// make the bot hold and probe (a 60 MB channel name, a thousand runs: 8.2 s per status and 1.2 GB).
// Each is checked at load, and the error names the key and its line.
const (
	MaxRunFileBytes = 1 << 20 // the file itself
	MaxRuns         = 100     // runs in one file
	MaxListItems    = 100     // items in any one list (outputs, metrics, stages, plans, ...)
	MaxValueBytes   = 4096    // any one value after ${VAR} expansion (PATH_MAX is 4096)
)

// checkFileSize refuses a run file past MaxRunFileBytes before it is parsed.
func checkFileSize(b []byte) error {
	if len(b) > MaxRunFileBytes {
		return fmt.Errorf("the run file is larger than the limit of %d bytes (1 MiB): a run file is a page of YAML", MaxRunFileBytes)
	}
	return nil
}

// checkText refuses a file that is not text before YAML reads it: --config pointed at a binary, a tarball
// or a checkpoint got "parse: control characters are not allowed", which named neither a line nor the
// likely mistake. A NUL byte, or a control character other than tab, newline and carriage return, is
// binary; the error names its line.
func checkText(b []byte) error {
	at := func(i int) (line, col int) {
		head := b[:i]
		return bytes.Count(head, []byte("\n")) + 1, i - bytes.LastIndexByte(head, '\n')
	}
	for i, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			line, col := at(i)
			return fmt.Errorf("line %d: column %d holds the byte 0x%02x, and a run file is YAML text: is this the right file? (a binary, an archive or a checkpoint is not a run file)",
				line, col, c)
		}
	}
	if !utf8.Valid(b) {
		line, col := at(invalidUTF8(b))
		return fmt.Errorf("line %d: column %d is not UTF-8 text, and a run file is YAML text: is this the right file? (save it as UTF-8 if it is)", line, col)
	}
	return nil
}

// invalidUTF8 is the offset of b's first byte that is not valid UTF-8.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// checkSizes walks the expanded document and refuses a value longer than MaxValueBytes, a list
// longer than MaxListItems, and more than MaxRuns runs, naming the key and its line.
func checkSizes(n *yaml.Node, where string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkSizes(c, where); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if len(n.Value) > MaxValueBytes {
			return fmt.Errorf("line %d: %s is %d bytes long; the limit for one value is %d", n.Line, describe(where), len(n.Value), MaxValueBytes)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if len(k.Value) > MaxValueBytes {
				return fmt.Errorf("line %d: a key in %s is %d bytes long; the limit is %d", k.Line, describe(where), len(k.Value), MaxValueBytes)
			}
			if err := checkSizes(n.Content[i+1], join(where, k.Value)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		limit, what := MaxListItems, "items"
		if where == "runs" {
			limit, what = MaxRuns, "runs"
		}
		if len(n.Content) > limit {
			return fmt.Errorf("line %d: %s lists %d %s; the limit is %d (the first past it is on line %d)",
				n.Line, describe(where), len(n.Content), what, limit, n.Content[limit].Line)
		}
		for i, c := range n.Content {
			if err := checkSizes(c, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ByteSize is a size in bytes, written 8388608, 8MiB, 16 MB or 512KiB.
type ByteSize int64

var byteSizeText = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMG]i?B|B)?\s*$`)

// UnmarshalYAML parses a byte size.
func (s *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	m := byteSizeText.FindStringSubmatch(n.Value)
	bad := fmt.Errorf("line %d: %q is not a size like 8MiB, 16MB or 1048576", n.Line, n.Value)
	if m == nil {
		return bad
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return bad
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[strings.TrimSpace(m[2])]
	*s = ByteSize(v * mult)
	return nil
}

// MinMetricsBody and MaxMetricsBody bound metrics_max_body: below 64 KiB a real vLLM scrape does
// not fit; above 256 MiB one scrape could hold the machine's memory.
const (
	MinMetricsBody = 64 << 10
	MaxMetricsBody = 256 << 20
)

func checkMetricsBody(s ByteSize) error {
	if s != 0 && (s < MinMetricsBody || s > MaxMetricsBody) {
		return fmt.Errorf("%d bytes is outside 64KiB..256MiB", int64(s))
	}
	return nil
}

// readRunFile reads at most one byte past MaxRunFileBytes, so a huge file is refused without
// being read whole.
func readRunFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A directory reads as "is a directory" and a FIFO could block: say what it is and what is wanted.
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not a run file: give the path of the YAML file (%s)", path, filepath.Join(path, "runwatch.yaml"))
		}
		return nil, fmt.Errorf("%s is not a regular file (%s): a run file is a YAML file", path, fi.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, MaxRunFileBytes+1))
}
