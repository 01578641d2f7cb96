package monitor

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/state"
)

// sharedProcTree writes a /proc with one ext4 root on 259:2 whose device has written sectors.
func sharedProcTree(t *testing.T, root string, sectors uint64) {
	t.Helper()
	// self is a link to a process directory, as in the real /proc.
	if err := os.MkdirAll(filepath.Join(root, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("4242", filepath.Join(root, "self")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	files := map[string]string{
		"4242/mountinfo": "1 0 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n",
		"diskstats":      fmt.Sprintf(" 259       2 nvme0n1p2 1000 0 8000 100 500 0 %d 300 0 400 400 0 0 0 0 0 0\n", sectors),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A one-shot command measures write rates against the reading a running bot left in the state
// directory; without one it does not wait a second for its own, it says a second sample is needed.
func TestWriteRateFromTheRunningBot(t *testing.T) {
	proc, dir, f := writeRateSetup(t)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	storage := Need{Storage: true}
	status := func(now time.Time, readOnly bool) (notices []string, rates map[string]float64) {
		t.Helper()
		m, _, err := New(f, Options{ProcRoot: proc, State: dir, ReadOnly: readOnly, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rs := m.Status(context.Background(), storage).Runs[0]
		if len(rs.Problems) > 0 {
			t.Fatalf("status problems = %+v; want none", rs.Problems)
		}
		if took := time.Since(start); took >= time.Second {
			t.Logf("status took %v", took) // not asserted: a loaded machine may be this slow
		}
		rates = map[string]float64{}
		for _, r := range rs.Storage.WriteRates {
			rates[r.Mount] = r.BytesPerS
		}
		for _, n := range rs.Notices {
			if n == rateNeedsSample {
				t.Errorf("status notices %q carry the write-rate note; want it with the storage only", rs.Notices)
			}
		}
		if rs.Storage.RateNote != "" {
			return []string{rs.Storage.RateNote}, rates
		}
		return nil, rates
	}

	// Nobody has read the counters yet: no rate, and the status says why.
	notices, rates := status(t0, true)
	if len(rates) != 0 || !strings.Contains(strings.Join(notices, "\n"), rateNeedsSample) {
		t.Errorf("one-shot status with no earlier reading: rates %v, notices %q; want none and %q", rates, notices, rateNeedsSample)
	}
	// The running bot samples (and keeps its reading); a minute later the device wrote 60 MiB more.
	status(t0, false)
	sharedProcTree(t, proc, 1_000_000+60<<11)
	notices, rates = status(t0.Add(time.Minute), true)
	if got, want := rates["/"], float64(60<<20)/60; got != want || len(notices) != 0 {
		t.Errorf("one-shot status after the bot's reading: rate on / = %v, notices %q; want %v B/s and no notice", got, notices, want)
	}
	// A reading older than ten minutes is not measured against.
	notices, rates = status(t0.Add(11*time.Minute), true)
	if len(rates) != 0 || len(notices) != 1 {
		t.Errorf("one-shot status 11 minutes after the bot's reading: rates %v, notices %q; want none and the note", rates, notices)
	}
}

// Ten runs that list one metrics endpoint and write to one mount: each sample scrapes the endpoint
// once and stats the mount once, and every run gets the reading.
func TestOnePassPerSample(t *testing.T) {
	srv := vllmServer(t, 1386*30)
	dir := t.TempDir()
	var statfs atomic.Int32
	usage := func(string) (probes.Usage, error) {
		statfs.Add(1)
		return probes.Usage{Total: 100 << 30, Free: 40 << 30, Used: 60 << 30}, nil
	}
	f := &config.File{Source: "test"}
	for i := range 10 {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		f.Runs = append(f.Runs, config.Run{Name: fmt.Sprintf("r%d", i), Metrics: []string{srv.URL + "/metrics"}, Outputs: []string{out}})
	}
	m, _, err := New(f, Options{StatFS: probes.NewStatFSFunc(time.Minute, usage)})
	if err != nil {
		t.Fatal(err)
	}
	for sample := 1; sample <= 3; sample++ {
		evs := m.Sample(context.Background())
		if got := srv.Scrapes(); got != int64(sample) {
			t.Errorf("after sample %d the endpoint served %d scrapes; want %d (one per sample for 10 runs)", sample, got, sample)
		}
		if got := statfs.Load(); got != int32(sample) {
			t.Errorf("after sample %d statfs ran %d times; want %d (one per mount per sample)", sample, got, sample)
		}
		for _, ev := range evs {
			if len(ev.Run.Engines) != 1 || !ev.Run.Engines[0].OK || len(ev.Run.Storage.Paths) != 1 || ev.Run.Storage.Paths[0].FreeBytes == nil {
				t.Errorf("sample %d run %s: engines %+v, paths %+v; want the shared reading", sample, ev.Run.Name, ev.Run.Engines, ev.Run.Storage.Paths)
			}
		}
	}
}

// With ScanEvery 3, samples (a minute apart) scan /proc once in three and reuse the scan between;
// an answer scans when it is asked, unless the last scan is at most ScanReuse old.
func TestSamplesShareTheWriterScan(t *testing.T) {
	proc := filepath.Join(t.TempDir(), "proc")
	if out, err := exec.Command("cp", "-a", "../probes/testdata/proc", proc).CombinedOutput(); err != nil {
		t.Fatalf("copy the /proc fixture: %v\n%s", err, out)
	}
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth"}}}
	clock := fake.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	m, _, err := New(f, Options{ProcRoot: proc, ScanEvery: 3, ScanReuse: 3 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	writers := func(sampling bool) int {
		t.Helper()
		ws, err := m.scanWriters(context.Background(), sampling)
		if err != nil {
			t.Fatal(err)
		}
		return len(ws.scan.Writers)
	}
	if n := writers(true); n != 10 {
		t.Fatalf("first sample's scan = %d writers; want the fixture's 10", n)
	}
	// Process 1002 (two writers) exits.
	if err := os.RemoveAll(filepath.Join(proc, "1002")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{10, 10, 8, 10, 10, 8} {
		clock.Add(time.Minute)
		if i == 3 {
			// An answer between samples sees what is there now: 1002 is back.
			if out, err := exec.Command("cp", "-a", "../probes/testdata/proc/1002", proc).CombinedOutput(); err != nil {
				t.Fatalf("copy 1002 back: %v\n%s", err, out)
			}
			if n := writers(false); n != 10 {
				t.Errorf("answer's scan = %d writers; want 10", n)
			}
			// Another answer 2 s later, and the samples after, read that scan until it has served
			// ScanEvery samples.
			clock.Add(2 * time.Second)
			if err := os.RemoveAll(filepath.Join(proc, "1002")); err != nil {
				t.Fatal(err)
			}
			if n := writers(false); n != 10 {
				t.Errorf("answer 2 s later = %d writers; want 10 (the scan 2 s old)", n)
			}
		}
		if n := writers(true); n != want {
			t.Errorf("sample %d's scan = %d writers; want %d", i+2, n, want)
		}
	}
}

// Questions asked while a scan is in flight wait for that scan, whatever their age rule says.
func TestQuestionsJoinTheScanInFlight(t *testing.T) {
	proc := filepath.Join(t.TempDir(), "proc")
	if out, err := exec.Command("cp", "-a", "../probes/testdata/proc", proc).CombinedOutput(); err != nil {
		t.Fatalf("copy the /proc fixture: %v\n%s", err, out)
	}
	m, _, err := New(&config.File{Source: "test", Runs: []config.Run{{Name: "synth"}}}, Options{ProcRoot: proc, ScanReuse: -1})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := &writerScan{done: make(chan struct{}), at: m.opts.Now()}
	m.lastScan = inFlight
	joined := make(chan struct{}, 40)
	m.scanJoined = func() { joined <- struct{}{} }
	got := make([]*writerScan, 40)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = m.scanWriters(context.Background(), i%2 == 0)
		}()
	}
	for range got {
		<-joined
	}
	go m.runScan(context.Background(), inFlight)
	wg.Wait()
	for i, ws := range got {
		if ws != inFlight || ws.scan == nil || len(ws.scan.Writers) != 10 {
			t.Errorf("question %d read scan %p; want the one in flight (%p) with the fixture's 10 writers", i, ws, inFlight)
		}
	}
}

// Forty storage questions over four runs, asked at once, read one scan, and each run classifies
// it once: the list every answer of a run gets is the same classification.
func TestEachRunClassifiesAScanOnce(t *testing.T) {
	proc := filepath.Join(t.TempDir(), "proc")
	if out, err := exec.Command("cp", "-a", "../probes/testdata/proc", proc).CombinedOutput(); err != nil {
		t.Fatalf("copy the /proc fixture: %v\n%s", err, out)
	}
	f := &config.File{Source: "test"}
	for i := range 4 {
		f.Runs = append(f.Runs, config.Run{Name: fmt.Sprintf("r%d", i), Outputs: []string{t.TempDir()}, Watch: []string{"/data"}, Protected: []string{"/shared"}})
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m, _, err := New(f, Options{ProcRoot: proc, Now: func() time.Time { return now }, StatFS: probes.NewStatFSFunc(time.Minute, benchUsage)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	answers := make([]reports.RunStatus, 40)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _ = m.RunStatus(context.Background(), fmt.Sprintf("r%d", i%4), Need{Storage: true})
		}()
	}
	wg.Wait()
	ws := m.lastScan
	if ws == nil || ws.samples != 0 || len(ws.classes) != 4 {
		t.Fatalf("last scan %+v; want one scan, classified once for each of the 4 runs", ws)
	}
	for i, a := range answers {
		if len(a.Problems) > 0 || len(a.Storage.Writers) == 0 {
			t.Errorf("answer %d: problems %+v, writers %+v; want the fixture's writers on /data and /shared", i, a.Problems, a.Storage.Writers)
		}
	}
}

// An answer within Options.Fresh of the last sample reads that sample's evaluation; an older one
// probes again; identical answers asked at once share one probe.
func TestAnswersShareEvaluations(t *testing.T) {
	release := make(chan struct{})
	var scrapes atomic.Int64
	var block atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1)
		if block.Load() {
			<-release
		}
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n# TYPE vllm:request_success_total counter\nvllm:request_success_total %d\n", n)
	}))
	t.Cleanup(srv.Close)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Metrics: []string{srv.URL + "/metrics"}, Total: 100}}}
	m, _, err := New(f, Options{Now: clock, Fresh: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	progress := Need{Progress: true}
	m.Sample(ctx)
	advance(5 * time.Second)
	rs, _ := m.RunStatus(ctx, "synth", progress)
	if scrapes.Load() != 1 || rs.Progress == nil || rs.Progress.Done != 1 {
		t.Errorf("answer 5 s after a sample: %d scrapes, progress %+v; want the sample's evaluation (1 scrape, 1 done)", scrapes.Load(), rs.Progress)
	}
	advance(6 * time.Second)
	rs, _ = m.RunStatus(ctx, "synth", progress)
	if scrapes.Load() != 2 || rs.Progress == nil || rs.Progress.Done != 2 {
		t.Errorf("answer 11 s after a sample: %d scrapes, progress %+v; want a fresh probe (2 scrapes, 2 done)", scrapes.Load(), rs.Progress)
	}

	// Five identical questions at once, 20 s later: one probe.
	advance(20 * time.Second)
	block.Store(true)
	joined := make(chan struct{}, 8)
	m.inflight.Joined = func(string) { joined <- struct{}{} }
	var wg sync.WaitGroup
	answers := make([]reports.RunStatus, 5)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _ = m.RunStatus(ctx, "synth", progress)
		}()
	}
	for range 4 {
		<-joined
	}
	close(release)
	wg.Wait()
	if got := scrapes.Load(); got != 3 {
		t.Errorf("5 identical questions at once: %d scrapes in all; want 3 (one for the five)", got)
	}
	for i, a := range answers {
		if a.Progress == nil || a.Progress.Done != 3 {
			t.Errorf("answer %d of the five = %+v; want 3 done", i, a.Progress)
		}
	}
}

// An answer about storage does not read an evaluation whose storage part is older than 10 s (or a
// sample interval, when shorter): the writer that stopped a while ago is not writing now. A sampler at
// a 1 s interval scans open files every 30 samples; one at 30 s takes a sample that answers for 32 s.
// Before, "are we writing to /shared?" after the writer exited read the sample's old scan and said Yes.
func TestStorageAnswersDoNotReadStaleEvidence(t *testing.T) {
	for _, tc := range []struct {
		name      string
		every     time.Duration // the sample interval
		scanEvery int
		fresh     time.Duration
		samples   int           // samples after the writer exits
		after     time.Duration // the answer, after the last sample
	}{
		{"1 s samples, a scan every 30", time.Second, 30, 3 * time.Second, 10, 500 * time.Millisecond},
		{"30 s samples", 30 * time.Second, 1, 32 * time.Second, 0, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc := filepath.Join(t.TempDir(), "proc")
			if out, err := exec.Command("cp", "-a", "../probes/testdata/proc", proc).CombinedOutput(); err != nil {
				t.Fatalf("copy the /proc fixture: %v\n%s", err, out)
			}
			f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Outputs: []string{t.TempDir()}, Protected: []string{"/shared"}}}}
			clock := fake.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			m, _, err := New(f, Options{ProcRoot: proc, ScanEvery: tc.scanEvery, Fresh: tc.fresh, Now: clock.Now,
				StatFS: probes.NewStatFSFunc(time.Minute, benchUsage)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			first := m.Sample(ctx)[0].Run.Storage
			if !first.ProtectedWrites || !first.AsOf.Equal(clock.Now()) {
				t.Fatalf("first sample: protected writes %t, as of %v; want the fixture's python3 writing to /shared, as of now (%v)",
					first.ProtectedWrites, first.AsOf, clock.Now())
			}
			// python3 (pid 1001), the one writer under /shared, exits.
			if err := os.RemoveAll(filepath.Join(proc, "1001")); err != nil {
				t.Fatal(err)
			}
			for range tc.samples {
				clock.Add(tc.every)
				m.Sample(ctx)
			}
			clock.Add(tc.after)
			rs, err := m.RunStatus(ctx, "synth", Need{Storage: true})
			if err != nil {
				t.Fatal(err)
			}
			if rs.Storage.ProtectedWrites || !rs.Storage.AsOf.Equal(clock.Now()) {
				t.Errorf("storage answer %v after the writer exited: protected writes %t, as of %v; want a new look, as of now (%v), no writes",
					clock.Now().Sub(first.AsOf), rs.Storage.ProtectedWrites, rs.Storage.AsOf, clock.Now())
			}
			// A second answer a moment later reads that evaluation.
			clock.Add(time.Second)
			again, _ := m.RunStatus(ctx, "synth", Need{Storage: true})
			if !again.Storage.AsOf.Equal(rs.Storage.AsOf) {
				t.Errorf("answer 1 s after a fresh look is as of %v; want %v", again.Storage.AsOf, rs.Storage.AsOf)
			}
		})
	}
}

// Two storage answers a moment apart (two people asking, or one asking twice) both carry the write
// rate: the second measures against the reading before the first, not against one a few
// milliseconds old. The long-lived bot's first reading says it is the first, not that no bot is
// running.
func TestWriteRateSurvivesQuickRepeat(t *testing.T) {
	proc, dir, f := writeRateSetup(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m, _, err := New(f, Options{ProcRoot: proc, State: dir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	status := func() (rate float64, note string) {
		t.Helper()
		rs := m.Status(context.Background(), Need{Storage: true}).Runs[0]
		for _, r := range rs.Storage.WriteRates {
			if r.Mount == "/" {
				rate = r.BytesPerS
			}
		}
		return rate, rs.Storage.RateNote
	}
	if rate, note := status(); rate != 0 || note == "" || strings.Contains(note, "no reading from a running bot") {
		t.Errorf("long-lived bot's first status: rate %v, note %q; want no rate and a note that this is the first reading", rate, note)
	}
	sharedProcTree(t, proc, 1_000_000+60<<11) // 60 MiB in the next minute
	now = now.Add(time.Minute)
	want := float64(60<<20) / 60
	if rate, note := status(); rate != want || note != "" {
		t.Errorf("status a minute later: rate %v, note %q; want %v B/s and no note", rate, note, want)
	}
	now = now.Add(200 * time.Millisecond)
	if rate, note := status(); rate <= 0 || note != "" {
		t.Errorf("status 200 ms after that: rate %v, note %q; want a rate measured against the earlier reading and no note", rate, note)
	}
}

// writeRateSetup is a /proc tree whose disk has written 1,000,000 sectors, a state directory and a run
// with one output, for the write-rate tests.
func writeRateSetup(t *testing.T) (proc string, dir *state.Dir, f *config.File) {
	t.Helper()
	proc, out := t.TempDir(), t.TempDir()
	sharedProcTree(t, proc, 1_000_000)
	dir, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return proc, dir, &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Outputs: []string{out}}}}
}

// An answer that quotes the latest sample's progress 10 s or more after it says how old it is: between
// two samples the answers agree, and a server that went down since does not read as up now.
func TestAnswersFromAnOldSampleSayItsAge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
	}))
	t.Cleanup(srv.Close)
	clock := fake.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Metrics: []string{srv.URL + "/metrics"}, Total: 100}}}
	m, _, err := New(f, Options{Now: clock.Now, Fresh: 32 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.Sample(ctx)
	age := func() string {
		t.Helper()
		rs, _ := m.RunStatus(ctx, "synth", Need{Progress: true})
		for _, n := range rs.Notices {
			if strings.HasPrefix(n, "progress and servers as of") {
				return n
			}
		}
		return ""
	}
	clock.Add(5 * time.Second)
	if n := age(); n != "" {
		t.Errorf("answer 5 s after a sample: notice %q; want none", n)
	}
	clock.Add(20 * time.Second)
	if n := age(); n != "progress and servers as of 25 s ago" {
		t.Errorf("answer 25 s after a sample: notice %q; want its age", n)
	}
}

// A status 25 s after a sample probes storage again (it is more than 10 s old) and quotes the sample's
// progress beside it: it says how old that progress is, and not the storage's.
func TestStatusOverAnOldSampleSaysWhichPartIsOld(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
	}))
	t.Cleanup(srv.Close)
	proc := t.TempDir()
	sharedProcTree(t, proc, 0)
	clock := fake.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	f := &config.File{Source: "test", Runs: []config.Run{{Name: "synth", Metrics: []string{srv.URL + "/metrics"}, Total: 100, Outputs: []string{t.TempDir()}}}}
	m, _, err := New(f, Options{ProcRoot: proc, Now: clock.Now, Fresh: 32 * time.Second, RateWindow: -1, StatFS: probes.NewStatFSFunc(time.Minute, benchUsage)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.Sample(ctx)
	clock.Add(25 * time.Second)
	rs, _ := m.RunStatus(ctx, "synth", All)
	if !slices.Contains(rs.Notices, "progress and servers as of 25 s ago") || !rs.Storage.AsOf.Equal(clock.Now()) {
		t.Errorf("status 25 s after a sample: notices %q, storage as of %v; want the progress's age said and storage read now (%v)", rs.Notices, rs.Storage.AsOf, clock.Now())
	}
}
