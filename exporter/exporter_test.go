package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

// fakeSource returns a fixed status.
type fakeSource struct{ st reports.Status }

func (f fakeSource) Status(context.Context, monitor.Need) reports.Status { return f.st }

// scrape serves h and parses what it says.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	return fams
}

func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		ok := true
		for k, v := range labels {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestSummarizeCapsAndAggregates(t *testing.T) {
	var ws []reports.WriterInfo
	// 40 mounts with one writer each, /dev/shm with 12 protected commands (two processes of one).
	for i := 0; i < 40; i++ {
		ws = append(ws, reports.WriterInfo{PID: 100 + i, Command: "w", File: fmt.Sprintf("/m%02d/f", i), Mount: fmt.Sprintf("/m%02d", i)})
	}
	for i := 0; i < 12; i++ {
		ws = append(ws, reports.WriterInfo{PID: 500 + i, Command: fmt.Sprintf("cmd%02d", i), File: fmt.Sprintf("/dev/shm/x%d", i), Mount: "/dev/shm", Protected: true, ProtectedPath: "/dev/shm"})
	}
	ws = append(ws, reports.WriterInfo{PID: 600, Command: "cmd00", File: "/dev/shm/y", Mount: "/dev/shm", Protected: true, ProtectedPath: "/dev/shm"})
	st := reports.Status{Runs: []reports.RunStatus{
		{Name: "a", Storage: reports.Storage{Writers: ws, Invisible: 3,
			ProtectedMounts: []reports.PathInfo{{Path: "/dev/shm", Mount: "/dev/shm", Protected: true, Role: "protected"}}}},
		// The second run sees the same scan: nothing is counted twice.
		{Name: "b", Storage: reports.Storage{Writers: ws[:5], Invisible: 3, Paths: []reports.PathInfo{{Path: "/m00/out", Mount: "/m00", Role: "output"}}}},
	}}
	f := Summarize(st, Options{MaxMounts: 8, MaxCommands: 4})
	if len(f.Mounts) != 9 || f.Mounts[0].Mount != "/dev/shm" || f.Mounts[8].Mount != Other || f.Capped["mount"] != 33 {
		t.Fatalf("mounts = %+v, capped %v; want /dev/shm first, 8 kept, 33 summed as other", f.Mounts, f.Capped)
	}
	if f.Mounts[0].Processes[true] != 13 || f.Mounts[0].Files[true] != 13 || f.Mounts[8].Processes[false] != 33 {
		t.Errorf("mount counts = %+v / %+v", f.Mounts[0], f.Mounts[8])
	}
	if len(f.Protected) != 5 || f.Protected[0].Command != "cmd00" || f.Protected[0].Processes != 2 || f.Capped["command"] != 8 {
		t.Errorf("protected = %+v, capped %v; want cmd00 (2) first, 4 commands and other", f.Protected, f.Capped)
	}
	var other int
	for _, p := range f.Protected {
		if p.Command == Other {
			other = p.Processes
		}
	}
	if other != 8 || f.Invisible != 3 || len(f.Paths) != 2 {
		t.Errorf("other = %d, invisible %d, paths %+v; want 8, 3, 2 paths", other, f.Invisible, f.Paths)
	}
	// Series count stays bounded whatever the node holds.
	fams := scrape(t, New(fakeSource{st}, Options{MaxMounts: 8, MaxCommands: 4}).Handler())
	n := 0
	for _, fam := range fams {
		n += len(fam.GetMetric())
	}
	if want := 9*4 + 5 + 1 + 2 + 1 + 1 + 1 + 3; n != want {
		t.Errorf("series = %d; want %d", n, want)
	}
}

// holdOpen starts `sleep` with path open for writing as its fd 3; the test ends it.
func holdOpen(t *testing.T, path string) int {
	t.Helper()
	pid, _ := holdOpenUntil(t, path)
	return pid
}

// holdOpenUntil is holdOpen with a stop that ends the process before the test does.
func holdOpenUntil(t *testing.T, path string) (int, func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "600")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

func TestExporterOnThisNode(t *testing.T) {
	dir := t.TempDir()
	shared, out := filepath.Join(dir, "shared"), filepath.Join(dir, "out")
	os.MkdirAll(shared, 0o755)
	os.MkdirAll(out, 0o755)
	holdOpen(t, filepath.Join(shared, "part-0001.jsonl"))
	holdOpen(t, filepath.Join(out, "part-0001.jsonl"))
	file := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Outputs: []string{out}, Protected: []string{shared}}}}
	m, _, err := monitor.New(file, monitor.Options{ProbeTimeout: 10 * time.Second, RateWindow: -1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, New(m, Options{}).Handler())
	if v, ok := value(fams, "runwatch_protected_writer_processes", map[string]string{"path": shared, "command": "sleep"}); !ok || v != 1 {
		t.Errorf("runwatch_protected_writer_processes{path=%q,command=sleep} = %v, %v; want 1", shared, v, ok)
	}
	if v, ok := value(fams, "runwatch_run_path_info", map[string]string{"run": "synth", "role": "output", "path": out, "protected": "false"}); !ok || v != 1 {
		t.Errorf("runwatch_run_path_info for the output = %v, %v; want 1", v, ok)
	}
	// The output's mount has its series even when nothing protected is written there.
	if _, ok := value(fams, "runwatch_writer_processes", map[string]string{"protected": "true"}); !ok {
		t.Error("no runwatch_writer_processes{protected=\"true\"} series")
	}
	if _, ok := value(fams, "runwatch_invisible_processes", nil); !ok {
		t.Error("no runwatch_invisible_processes")
	}
	for name := range fams {
		if !strings.HasPrefix(name, "runwatch_") {
			t.Errorf("family %s: want only runwatch_ series", name)
		}
	}
}

// The problems runwatch_exporter_problems counts are in the log: each when it starts, again when
// its error changes, and once when it ends; a scrape that repeats them logs nothing.
func TestExporterLogsItsProblems(t *testing.T) {
	var logs bytes.Buffer
	src := &stepSource{}
	e := New(src, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	problems := func(errs ...string) reports.Status {
		rs := reports.RunStatus{Name: "synth"}
		for i, e := range errs {
			rs.Problems = append(rs.Problems, reports.Problem{Probe: fmt.Sprintf("probe-%d", i), Error: e})
		}
		return reports.Status{Runs: []reports.RunStatus{rs}}
	}
	for i, tc := range []struct {
		st   reports.Status
		want []string // log lines of this scrape, in order
	}{
		{problems("statfs /shared: deadline exceeded"), []string{`level=WARN msg="exporter problem" run=synth probe=probe-0 err="statfs /shared: deadline exceeded"`}},
		{problems("statfs /shared: deadline exceeded"), nil},
		{problems("statfs /shared: permission denied", "scan /proc: too slow"), []string{
			`probe=probe-0 err="statfs /shared: permission denied"`, `probe=probe-1 err="scan /proc: too slow"`}},
		{problems(), []string{`msg="exporter problem resolved" run=synth probe=probe-0`, `msg="exporter problem resolved" run=synth probe=probe-1`}},
	} {
		logs.Reset()
		src.st = tc.st
		fams := scrape(t, e.Handler())
		if v, _ := value(fams, "runwatch_exporter_problems", nil); int(v) != len(tc.st.Runs[0].Problems) {
			t.Errorf("scrape %d: runwatch_exporter_problems = %v; want %d", i, v, len(tc.st.Runs[0].Problems))
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if len(tc.want) == 0 && logs.Len() > 0 || len(tc.want) > 0 && len(lines) != len(tc.want) {
			t.Errorf("scrape %d logged %q; want %d lines", i, logs.String(), len(tc.want))
			continue
		}
		for j, w := range tc.want {
			if !strings.Contains(lines[j], w) {
				t.Errorf("scrape %d, line %d = %q; want %q in it", i, j, lines[j], w)
			}
		}
	}
}

// stepSource returns whatever status the test sets.
type stepSource struct{ st reports.Status }

func (s *stepSource) Status(context.Context, monitor.Need) reports.Status { return s.st }

// An exporter whose scan of open files failed says so (runwatch_exporter_scan_success 0, the error in
// its log) rather than exporting a failed scan's zeros as a node where nobody writes; a scan that runs
// whole says 1. The /proc it reads holds an entry the scan cannot read (a pid that is a file, not a
// directory: an error that is neither "gone" nor "permission denied"). Each scrape is a new exporter's:
// one exporter reuses a scan a few seconds old.
func TestExporterSaysWhenItsScanFailed(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(shared, 0o755)
	proc := testkit.ProcView(t)
	file := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Protected: []string{shared}}}}
	success := func() (float64, string) {
		t.Helper()
		m, err := NodeMonitor(file, proc, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		v, ok := value(scrape(t, New(m, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))}).Handler()), "runwatch_exporter_scan_success", nil)
		if !ok {
			t.Fatal("no runwatch_exporter_scan_success series")
		}
		return v, logs.String()
	}
	if v, _ := success(); v != 1 {
		t.Errorf("runwatch_exporter_scan_success over a readable /proc = %v; want 1", v)
	}
	bad := filepath.Join(proc, "77777")
	if err := os.WriteFile(bad, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if v, logs := success(); v != 0 || !strings.Contains(logs, "77777/fd") {
		t.Errorf("with the scan failing: runwatch_exporter_scan_success = %v, log %q; want 0 and the scan's error (77777/fd)", v, logs)
	}
}

// The per-mount and per-command counts are over every writer on the node, not the 200 a report
// lists: 50 processes each holding 10 files open under the protected path are 500 writers (the
// report's cut kept 200 of them, 20 processes: the series said 20 and 200).
func TestExporterCountsEveryWriter(t *testing.T) {
	const procs, files = 50, 10
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(shared, 0o755)
	var pids []int
	for i := range procs {
		var extra []*os.File
		for j := range files {
			f, err := os.OpenFile(filepath.Join(shared, fmt.Sprintf("part-%03d-%02d.bin", i, j)), os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			extra = append(extra, f)
		}
		cmd := exec.Command("sleep", "600")
		cmd.ExtraFiles = extra
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	file := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Protected: []string{shared}}}}
	m, err := NodeMonitor(file, testkit.ProcView(t, pids...), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, New(m, Options{}).Handler())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"runwatch_protected_writer_processes", map[string]string{"path": shared, "command": "sleep"}, procs},
		{"runwatch_writer_processes", map[string]string{"protected": "true"}, procs},
		{"runwatch_writer_open_files", map[string]string{"protected": "true"}, procs * files},
	} {
		if v, ok := value(fams, c.name, c.labels); v != c.want {
			t.Errorf("%s %v = %v (found %v); want %v", c.name, c.labels, v, ok, c.want)
		}
	}
}
