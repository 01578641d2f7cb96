package monitor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/reports/estimate"
)

// pathSpec is a configured path and why it is watched.
type pathSpec struct{ path, role string }

func runPaths(r *config.Run) []pathSpec {
	var ps []pathSpec
	for _, p := range r.Outputs {
		ps = append(ps, pathSpec{p, reports.RoleOutput})
	}
	for _, p := range r.Watch {
		ps = append(ps, pathSpec{p, reports.RoleWatch})
	}
	for _, p := range r.Protected {
		ps = append(ps, pathSpec{p, reports.RoleProtected})
	}
	for _, p := range r.Plans {
		ps = append(ps, pathSpec{p.Target, "plan"})
	}
	return ps
}

// observePaths resolves each configured path, finds its mount and reads the mount's capacity, each
// under the probe timeout, all concurrently. With plansOnly, only the plans' targets: a "will it
// fit?" answer must not wait for, or name, a hung mount it does not need.
func (m *Monitor) observePaths(ctx context.Context, r *config.Run, pass *pass, plansOnly bool, problem func(string, error)) []reports.PathObservation {
	shared := pass.wait()
	specs := runPaths(r)
	if plansOnly {
		specs = slices.DeleteFunc(specs, func(sp pathSpec) bool { return sp.role != "plan" })
	}
	obs := make([]reports.PathObservation, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Add(1)
		go func(i int, sp pathSpec) {
			defer wg.Done()
			obs[i] = m.observePath(ctx, pass, sp, shared.table)
		}(i, sp)
	}
	wg.Wait()
	// Report each failure once per mount, not once per path.
	seen := map[string]bool{}
	for _, o := range obs {
		if o.ResolveErr != nil && !seen["r"+o.Path] {
			seen["r"+o.Path] = true
			problem("path "+o.Path, o.ResolveErr)
		}
		if o.UsageErr != nil && !seen["u"+o.Mount.MountPoint] {
			seen["u"+o.Mount.MountPoint] = true
			problem("statfs "+o.Mount.MountPoint, o.UsageErr)
		}
	}
	return obs
}

func (m *Monitor) observePath(ctx context.Context, pass *pass, sp pathSpec, table *probes.MountTable) reports.PathObservation {
	o := reports.PathObservation{Path: sp.path, Role: sp.role, Resolved: filepath.Clean(sp.path)}
	c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	res, err := m.guard.Resolve(c, sp.path)
	if err != nil {
		o.ResolveErr = probes.NoAnswer(err, m.opts.ProbeTimeout)
	} else {
		o.Resolved = res
		o.Exists = m.exists(c, res)
	}
	if table == nil {
		return o
	}
	o.Mount, o.HasMount = table.Lookup(o.Resolved)
	if !o.HasMount {
		return o
	}
	u, err := m.usage(c, pass, o.Mount.MountPoint) // once per pass, however many paths are on it
	if err != nil {
		o.UsageErr = probes.NoAnswer(err, m.opts.ProbeTimeout)
		return o
	}
	o.Usage = &u
	return o
}

// ErrNotAllowed marks a question about a path that no run configures.
var ErrNotAllowed = errors.New("not a configured path")

// ResolveTarget resolves a path named in a question. Only paths on the mounts of the run's
// configured paths, and inside or above one of them, are answered: chat is not a way to explore the
// machine's filesystem.
func (m *Monitor) ResolveTarget(ctx context.Context, runName, path string) (reports.Target, error) {
	r, ok := m.file.RunByName(runName)
	if !ok {
		return reports.Target{}, fmt.Errorf("no run named %q", runName)
	}
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return reports.Target{}, fmt.Errorf("%w: %q is not an absolute path", ErrNotAllowed, path)
	}
	c, cancel := context.WithTimeout(ctx, 2*m.opts.ProbeTimeout)
	defer cancel()
	table, err := m.mounts.Read(c)
	if err != nil {
		return reports.Target{}, fmt.Errorf("read mount table: %w", err)
	}
	notAllowed := fmt.Errorf("%w: %s is not one of run %s's outputs, watched paths or protected mounts", ErrNotAllowed, path, r.Name)
	guard := m.guard
	if !lexicallyNear(r, path) {
		guard = m.askGuard // see Monitor.askGuard
	}
	res, err := guard.Resolve(c, path)
	if err != nil {
		// A path that fails to resolve is named only when it is one of the run's paths, inside one
		// or above one: for any other the error ("lstat /home/x/.ssh: permission denied") would
		// tell what exists on the machine, and chat is not a way to explore it.
		if !lexicallyNear(r, path) {
			return reports.Target{}, notAllowed
		}
		return reports.Target{}, probes.NoAnswer(err, m.opts.ProbeTimeout)
	}
	mt, ok := table.Lookup(res)
	if !ok {
		return reports.Target{}, fmt.Errorf("no mount holds %s", path)
	}
	allowed := false
	for _, sp := range runPaths(r) {
		cres, err := m.guard.Resolve(c, sp.path)
		if err != nil {
			continue
		}
		cm, ok := table.Lookup(cres)
		if !ok || cm.ID != mt.ID {
			continue
		}
		for _, base := range []string{cres, filepath.Clean(sp.path)} {
			if reports.Under(res, base) || reports.Under(base, res) || reports.Under(path, base) {
				allowed = true
			}
		}
	}
	if !allowed {
		return reports.Target{}, notAllowed
	}
	return reports.Target{
		Path: path, Resolved: res, Exists: m.exists(c, res), Mount: mt.MountPoint, FSType: mt.FSType,
		Device: mt.Source, MountPoint: res == mt.MountPoint,
	}, nil
}

// lexicallyNear reports whether path, as written, is one of r's paths, inside one or above one.
func lexicallyNear(r *config.Run, path string) bool {
	for _, sp := range runPaths(r) {
		base := filepath.Clean(sp.path)
		if reports.Under(path, base) || reports.Under(base, path) {
			return true
		}
	}
	return false
}

// evaluatePlans fills in each plan's model shape and tokens and compares it with free space. A plan that
// cannot be evaluated (its model_config unreadable, an unknown dtype) says why in its own Error and
// Sentence, naming the run-file key and line, and nowhere else: not again as a problem of the run.
func (m *Monitor) evaluatePlans(ctx context.Context, r *config.Run, obs []reports.PathObservation, smp *sample, eta *reports.ETA) []reports.PlanResult {
	out := make([]reports.PlanResult, 0, len(r.Plans))
	for _, p := range r.Plans {
		spec := reports.PlanSpec{
			Name: p.Name, Target: p.Target, AllLayers: p.Layers.All || len(p.Layers.List) == 0, Layers: p.Layers.List,
			NumLayers: p.NumLayers, Hidden: p.HiddenSize, DType: strings.ToLower(p.DType), ModelSrc: "run file",
		}
		if p.ModelConfig != "" {
			c, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
			shape, err := m.guard.ReadModelConfig(c, p.ModelConfig)
			cancel()
			if err == nil {
				if err := checkModelShape(p, shape); err != nil {
					out = append(out, reports.PlanResult{Name: p.Name, Target: p.Target, Error: err.Error(),
						Sentence: fmt.Sprintf("*%s*: %s.", reports.Esc(p.Name), reports.Esc(err.Error()))})
					continue
				}
			}
			if err != nil {
				err = describeModelConfigErr(p, err, m.opts.ProbeTimeout)
				out = append(out, reports.PlanResult{Name: p.Name, Target: p.Target, Error: err.Error(),
					Sentence: fmt.Sprintf("*%s*: cannot read the model config: %s", reports.Esc(p.Name), reports.Esc(err.Error()))})
				continue
			}
			// Explicit keys in the run file override the config.json.
			if spec.NumLayers == 0 {
				spec.NumLayers = shape.NumLayers
			}
			if spec.Hidden == 0 {
				spec.Hidden = shape.HiddenSize
			}
			if spec.DType == "" {
				spec.DType = strings.ToLower(shape.DType)
			}
			spec.ModelSrc = p.ModelConfig
		}
		if spec.DType == "" {
			spec.DType = "bfloat16"
		}
		spec.ElemBytes = config.DTypes[spec.DType]
		if spec.ElemBytes == 0 {
			err := fmt.Errorf("dtype %q is not known", spec.DType)
			out = append(out, reports.PlanResult{Name: p.Name, Target: p.Target, Error: err.Error(),
				Sentence: fmt.Sprintf("*%s*: %s; set dtype: in the plan.", reports.Esc(p.Name), reports.Esc(err.Error()))})
			continue
		}
		if p.Tokens.Auto {
			if failed := failedProgress(smp); failed != "" {
				spec.TokensErr = failed
			}
			if pr, ok := autoTokens(smp, eta); ok {
				spec.Tokens, spec.TokensSrc = pr.Point, "projected"
				if pr.Measured {
					spec.TokensSrc, spec.PromptTokens = "measured", smp.promptTokens
				} else if pr.High > pr.Low {
					spec.TokensLow, spec.TokensHigh = pr.Low, pr.High
					spec.Items, spec.PerItemLow, spec.PerItemHigh = pr.Items, pr.PerItemLow, pr.PerItemHigh
					spec.PromptPerItem = pr.PromptPerItem
				}
			}
		} else {
			spec.Tokens, spec.TokensSrc = p.Tokens.N, "configured"
		}
		var free *uint64
		var mount, host string
		for _, o := range obs {
			if o.Role == "plan" && o.Path == p.Target {
				if o.Usage != nil {
					f := o.Usage.Free
					free = &f
				}
				switch {
				case o.UsageErr != nil:
					spec.FreeErr = o.UsageErr.Error()
					if !strings.HasPrefix(spec.FreeErr, "statfs ") {
						spec.FreeErr = "statfs " + o.Mount.MountPoint + ": " + spec.FreeErr
					}
				case o.ResolveErr != nil:
					spec.FreeErr = o.ResolveErr.Error()
				}
				mount, host = o.Mount.MountPoint, o.Host
			}
		}
		out = append(out, reports.EvaluatePlan(spec, free, mount, host))
	}
	return out
}

// failedProgress names the progress sources that failed when smp has no progress reading ("no
// progress reading: `log /x` and `metrics http://y` failed (below)"); "" when it has one, or none failed.
func failedProgress(smp *sample) string {
	if smp == nil || smp.hasProgress {
		return ""
	}
	var names []string
	for _, p := range reports.ProgressProblems(smp.problems) {
		names = append(names, reports.Code(p.Probe))
	}
	if len(names) == 0 {
		return ""
	}
	return "no progress reading: " + strings.Join(names, " and ") + " failed (below)"
}

// autoTokens is the token count for `tokens: auto`: the tokens the run will have produced when it
// ends, prompt and completion both, projected from the censored mean completion (estimate.Project)
// with its range; the estimator's tokens per item, from a longer history, prices the items not
// started yet.
func autoTokens(smp *sample, eta *reports.ETA) (estimate.Projection, bool) {
	if smp == nil {
		return estimate.Projection{}, false
	}
	o := smp.obs
	o.Done, o.Total = smp.progress.Done, smp.progress.Total
	if smp.genTokens <= 0 {
		o.GenTokens = nil
	}
	perItem := 0.0
	if eta != nil && !eta.Rough {
		perItem = eta.TokensPerItem
	}
	return estimate.Project(o, smp.promptTokens, perItem)
}

// exists reports whether path can be stat'ed before ctx ends.
func (m *Monitor) exists(ctx context.Context, path string) bool {
	_, err := m.guard.Stat(ctx, path)
	return err == nil
}

// checkModelShape holds a config.json to the bounds the run file's num_layers and hidden_size have, so a
// corrupt or hand-edited one is named instead of priced at zettabytes.
func checkModelShape(p config.Plan, s probes.ModelShape) error {
	switch {
	case s.NumLayers > config.MaxNumLayers:
		return fmt.Errorf("%s: %s gives %s layers, more than any model has (at most %s)",
			p.KeyAt("model_config"), p.ModelConfig, reports.Count(float64(s.NumLayers)), reports.Count(config.MaxNumLayers))
	case s.HiddenSize > config.MaxHiddenSize:
		return fmt.Errorf("%s: %s gives a hidden size of %s, more than any model has (at most %s)",
			p.KeyAt("model_config"), p.ModelConfig, reports.Count(float64(s.HiddenSize)), reports.Count(config.MaxHiddenSize))
	}
	return nil
}

// describeModelConfigErr words a failed read of a plan's model_config for the person who wrote the run file:
// the key that names the file, with its line, and what is wrong with it, not the open(2) error under two
// wrappings.
func describeModelConfigErr(p config.Plan, err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %s does not exist", p.KeyAt("model_config"), p.ModelConfig)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: %s may not be read: permission denied; run as a user who may read it", p.KeyAt("model_config"), p.ModelConfig)
	}
	return fmt.Errorf("%s: %w", p.KeyAt("model_config"), probes.NoAnswer(err, timeout))
}
