package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"runwatch/internal/peersim"
	"runwatch/probes"
	"runwatch/reports"
	"runwatch/sim"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// readScrape parses a /metrics body captured from the simulator (see testdata/SOURCES.md).
func readScrape(t *testing.T, name string) (scrape, string) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseScrape(text)
	if err != nil {
		t.Fatalf("parseScrape(%s): %v", name, err)
	}
	return s, string(text)
}

// textSum adds the values of the exposition lines whose series starts with prefix: an independent reading
// of the same text, without expfmt.
func textSum(t *testing.T, text, prefix string) (float64, bool) {
	t.Helper()
	var v float64
	found := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		v += f
		found = true
	}
	return v, found
}

func TestObserveSumsSimulatorScrapes(t *testing.T) {
	files := []string{"llmd_sim_rank0_busy.txt", "llmd_sim_rank1_idle.txt", "llmd_sim_finished.txt"}
	var scrapes []scrape
	var texts []string
	for _, f := range files {
		s, text := readScrape(t, f)
		scrapes = append(scrapes, s)
		texts = append(texts, text)
	}
	want := func(prefix string) float64 {
		var v float64
		for _, text := range texts {
			x, _ := textSum(t, text, prefix)
			v += x
		}
		return v
	}
	// The idle rank has finished nothing: the simulator exports no token counter for it at all.
	if _, ok := textSum(t, texts[1], "vllm:generation_tokens_total"); ok {
		t.Fatalf("%s has a token counter; the fixture no longer shows an idle rank", files[1])
	}
	js := jobState{Done: 13, Total: 40, Errors: 2, CompletionSum: 2417, Elapsed: 3.25, MaxTokens: 300}
	o := observe(3.25, js, scrapes)
	checks := []struct {
		name string
		got  *float64
		want float64
	}{
		{"gen_tokens", o.GenTokens, want("vllm:generation_tokens_total")},
		{"running", o.Running, want("vllm:num_requests_running")},
		{"waiting", o.Waiting, want("vllm:num_requests_waiting")},
		{"finished_len_sum", o.FinishedLenSum, want("vllm:request_generation_tokens_sum")},
		{"finished_len_count", o.FinishedLenCount, want("vllm:request_generation_tokens_count")},
		{"length_capped", o.LengthCapped, want(`vllm:request_success_total{finish_reason="length"`)},
		{"avg_completion", o.AvgCompletion, math.Round(2417.0/13*10) / 10},
		{"elapsed", o.Elapsed, 3.25},
	}
	for _, c := range checks {
		if c.got == nil || *c.got != c.want {
			t.Errorf("observe: %s = %v; want %v", c.name, deref(c.got), c.want)
		}
	}
	if *o.Waiting == 0 || *o.Running == 0 || *o.LengthCapped == 0 {
		t.Errorf("observe = %+v; the fixtures should show a queue, a batch and capped requests", o)
	}
	if o.T != 3.25 || o.Done != 13 || o.Total != 40 || o.Errors != 2 || o.MaxTokens != 300 {
		t.Errorf("observe job fields = %+v; want t 3.25, 13/40, 2 errors, max_tokens 300", o)
	}
}

func TestObserveLeavesOutServersThatDidNotAnswer(t *testing.T) {
	busy, text := readScrape(t, "llmd_sim_rank0_busy.txt")
	down := scrape{Err: errors.New("connection refused")}
	js := jobState{Done: 0, Total: 10}

	o := observe(1, js, []scrape{down, busy})
	gen, _ := textSum(t, text, "vllm:generation_tokens_total")
	if o.GenTokens == nil || *o.GenTokens != gen {
		t.Errorf("observe(down, busy).GenTokens = %v; want %v (the answering server's own counter)", deref(o.GenTokens), gen)
	}
	if o.AvgCompletion != nil {
		t.Errorf("observe with nothing done: avg_completion = %v; want none", *o.AvgCompletion)
	}

	o = observe(1, js, []scrape{down})
	if o.GenTokens != nil || o.Running != nil || o.Waiting != nil || o.FinishedLenSum != nil || o.LengthCapped != nil {
		t.Errorf("observe(all down) = %+v; want no engine fields", o)
	}
}

func TestTraceRoundTrip(t *testing.T) {
	busy, _ := readScrape(t, "llmd_sim_rank0_busy.txt")
	fin, _ := readScrape(t, "llmd_sim_finished.txt")
	obs := []reports.Observation{
		observe(0, jobState{Total: 12, MaxTokens: 300}, []scrape{busy}),
		observe(0.5004, jobState{Done: 5, Total: 12, CompletionSum: 800, Elapsed: 0.5004, MaxTokens: 300}, []scrape{busy}),
		observe(1.2, jobState{Done: 12, Total: 12, Errors: 1, CompletionSum: 2413, Elapsed: 1.2, MaxTokens: 300}, []scrape{fin}),
	}
	var buf bytes.Buffer
	if err := sim.WriteTrace(&buf, obs); err != nil {
		t.Fatal(err)
	}
	back, err := sim.ReadTrace(&buf)
	if err != nil {
		t.Fatalf("ReadTrace(written trace): %v", err)
	}
	if !reflect.DeepEqual(back, obs) {
		t.Errorf("ReadTrace(WriteTrace(obs)) = %+v; want %+v", back, obs)
	}
	if back[1].T != 0.5 {
		t.Errorf("t = %v; want 0.5 (rounded to the millisecond)", back[1].T)
	}
}

func TestProgressLineParses(t *testing.T) {
	js := jobState{Done: 340, Total: 3000, Errors: 7, CompletionSum: 340 * 231.4, Elapsed: 12.3}
	line := progressLine(js)
	p, ok := probes.ParseProgress([]byte(line), nil)
	if !ok {
		t.Fatalf("ParseProgress(%q) found no progress", line)
	}
	if p.Done != 340 || p.Total != 3000 || p.Errors != 7 || math.Abs(p.AvgTokens-231) > 0.5 || p.Elapsed != 12.3 {
		t.Errorf("ParseProgress(%q) = %+v; want 340/3000, 7 errors, avg 231, elapsed 12.3", line, p)
	}
}

func TestMaxTokensShapes(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	d := drift(256, 1024, 0.3, 0.7)
	for _, c := range []struct{ i, want int }{{0, 256}, {300, 256}, {500, 640}, {700, 1024}, {999, 1024}} {
		if got := d(c.i, 1000, r); got != c.want {
			t.Errorf("drift(%d of 1000) = %d; want %d", c.i, got, c.want)
		}
	}
	s := stragglers(256, 4096, 40)
	if s(959, 1000, r) != 256 || s(960, 1000, r) != 4096 {
		t.Errorf("stragglers: item 959 = %d, 960 = %d; want 256, 4096", s(959, 1000, r), s(960, 1000, r))
	}
	lu := logUniform(128, 2048)
	lo, hi := 2048, 0
	for i := 0; i < 1000; i++ {
		m := lu(i, 1000, r)
		lo, hi = min(lo, m), max(hi, m)
	}
	if lo < 128 || hi > 2048 || lo > 160 || hi < 1600 {
		t.Errorf("logUniform(128, 2048) over 1,000 draws spans %d-%d; want within 128-2048, from near one end to the other", lo, hi)
	}
	w := lognormalWords(300, 1.2, 20, 6000)
	for i := 0; i < 1000; i++ {
		if n := w(i, r); n < 20 || n > 6000 {
			t.Fatalf("lognormalWords = %d; want within [20, 6000]", n)
		}
	}
}

// TestRunFileMaxTokens: a job whose items each have their own max_tokens records the run file's one value on
// every line, as runwatch would read it from `max_tokens:`, not the max_tokens of the request sent last.
func TestRunFileMaxTokens(t *testing.T) {
	var mu sync.Mutex
	var sent []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		sent = append(sent, body.MaxTokens)
		mu.Unlock()
		fmt.Fprint(w, `{"usage":{"completion_tokens":7}}`)
	}))
	defer srv.Close()
	for _, c := range []struct {
		runFile, want int
	}{{0, 0}, {2048, 2048}} {
		// One worker, so that the request sent last is the last item's: with two, either could set it last, by
		// however the scheduler ran them.
		sc := scenario{Name: "mixed", Items: 20, Concurrency: 1, MaxTokens: logUniform(128, 2048), RunFileMaxTokens: c.runFile, Seed: 1}
		j := newJob(sc, []string{srv.URL}, srv.Client())
		j.start = time.Now()
		j.run(context.Background())
		st := j.state(time.Now())
		want := int64(c.want)
		if c.runFile == 0 {
			want = int64(j.max[len(j.max)-1]) // the request sent last
		}
		if st.Done != 20 || st.MaxTokens != want {
			t.Errorf("run file %d: state %+v; want 20 done and max_tokens %d", c.runFile, st, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 40 || sent[0] == sent[1] && sent[1] == sent[2] {
		t.Errorf("the servers saw max_tokens %v; want 40 requests, each with its own", sent)
	}
}

// TestTracePath: a held-out job's trace is kept apart from the corpus, whose every *.jsonl the accuracy
// benchmark scores and the estimator was tuned on.
func TestTracePath(t *testing.T) {
	for _, c := range []struct {
		name string
		seed int
		want string
	}{
		{"steady", 0, "reports/testdata/peer/steady.jsonl"},
		{"steady", 3, "reports/testdata/peer/seeds/steady.s3.jsonl"},
		{"ho-wide", 0, "reports/testdata/peer/heldout/ho-wide.jsonl"},
		{"ho-long", 2, "reports/testdata/peer/heldout/seeds/ho-long.s2.jsonl"},
		{"c2-steady", 0, "reports/testdata/peer2/c2-steady.jsonl"},
		{"c2-frozen", 4, "reports/testdata/peer2/seeds/c2-frozen.s4.jsonl"},
	} {
		if got := tracePath(c.name, c.seed); got != c.want {
			t.Errorf("tracePath(%q, %d) = %q; want %q", c.name, c.seed, got, c.want)
		}
	}
	for _, s := range heldout() {
		if _, err := os.Stat(filepath.Join("../..", tracePath(s.Name, 0))); err != nil {
			t.Errorf("held-out %s: %v", s.Name, err)
		}
	}
}

// TestRecordScriptPaths runs scripts/recordpeer.sh on a corpus scenario and a held-out one with a simulator
// that is not there: each fails at once, naming the trace it was to write. The script listed every scenario
// (recordpeer -list names the held-out jobs too) and wrote each into reports/testdata/peer/, where a held-out
// job would have joined the corpus.
func TestRecordScriptPaths(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command("bash", "../recordpeer.sh", "steady", "ho-wide")
	cmd.Env = append(os.Environ(), "SIM="+filepath.Join(t.TempDir(), "absent.gz"), "LOG_DIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("recordpeer.sh: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"steady failed (recording reports/testdata/peer/steady.jsonl)",
		"ho-wide failed (recording reports/testdata/peer/heldout/ho-wide.jsonl)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("recordpeer.sh said:\n%s\nwant a line with %q", stderr.String(), want)
		}
	}
}

// TestCommittedTraces checks every recorded trace, the listed scenarios' and the other draws' in seeds/:
// strict replay format, time moving forward, the job's counts never going back, its scenario's item count,
// and a last line at the finish.
func TestCommittedTraces(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../../reports/testdata/peer/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	draws, err := filepath.Glob("../../reports/testdata/peer/seeds/*.s[0-9]*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	held, err := filepath.Glob("../../reports/testdata/peer/heldout/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	heldDraws, err := filepath.Glob("../../reports/testdata/peer/heldout/seeds/*.s[0-9]*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, heldDraws...)
	second, err := filepath.Glob("../../reports/testdata/peer2/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	secondDraws, err := filepath.Glob("../../reports/testdata/peer2/seeds/*.s[0-9]*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(append(append(append(paths, draws...), held...), second...), secondDraws...)
	if len(paths) == 0 {
		t.Skip("no traces recorded yet")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			name, _, _ := strings.Cut(filepath.Base(p), ".")
			sc, ok := find(name)
			if !ok {
				t.Fatalf("%s: no scenario %q", p, name)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			obs, err := sim.ReadTrace(bufio.NewReader(f))
			if err != nil {
				t.Fatalf("ReadTrace: %v", err)
			}
			if len(obs) < 20 || len(obs) > 600 {
				t.Errorf("%d lines; want 20-600", len(obs))
			}
			for i := 1; i < len(obs); i++ {
				a, b := obs[i-1], obs[i]
				if b.T < a.T || b.Done < a.Done || b.Errors < a.Errors || b.Total != a.Total {
					t.Fatalf("line %d goes back: %+v after %+v", i+1, b, a)
				}
			}
			last := obs[len(obs)-1]
			if last.Total != int64(sc.Items) {
				t.Errorf("total %v; want the scenario's %d items", last.Total, sc.Items)
			}
			if last.Done != last.Total || last.GenTokens == nil || *last.GenTokens == 0 {
				t.Errorf("last line %+v; want done == total and a token count", last)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestRecordAgainstSimulator records a tiny job against the real simulator: two data-parallel ranks and a
// restart half way, so unpacking, start, readiness, the kill and the restart, sampling and writing all run.
func TestRecordAgainstSimulator(t *testing.T) {
	t.Parallel()
	gz, err := peersim.Find(".")
	if err != nil {
		peersim.Missing(t, "the third-party simulator", err)
	}
	sc := scenario{
		Name: "tiny", Items: 60, Concurrency: 8, MaxTokens: fixed(64),
		Servers:   one(2, 3, simFlags(4, 5*ms, 1*ms, 1.2)),
		RestartAt: 0.5, Downtime: 200 * ms, Every: 100 * ms, Seed: 1,
	}
	out := filepath.Join(t.TempDir(), "tiny.jsonl")
	var log bytes.Buffer
	if err := record(t.Context(), sc, gz, out, &log); err != nil {
		t.Fatalf("record: %v\n%s", err, log.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	obs, err := sim.ReadTrace(f)
	if err != nil {
		t.Fatalf("ReadTrace: %v", err)
	}
	last := obs[len(obs)-1]
	if last.Done != 60 || last.Total != 60 || last.Running == nil || *last.Running != 0 {
		t.Errorf("last line %+v; want 60/60 done and nothing running", last)
	}
	high := 0.0
	for _, o := range obs {
		if o.GenTokens == nil {
			continue
		}
		if *o.GenTokens < high {
			t.Errorf("gen_tokens went down at t=%v; want the trace folded (the restart counted, the total carried)", o.T)
		}
		high = max(high, *o.GenTokens)
	}
	t.Logf("log:\n%s", log.String())
	if last.Restarts < 1 {
		t.Errorf("last line %+v; want the restarted rank's counter counted as a restart\n%s", last, log.String())
	}
	if !strings.Contains(log.String(), "Progress: 60/60") || !strings.Contains(log.String(), "restart: started again") {
		t.Errorf("log has no restart or progress lines:\n%s", log.String())
	}
}

// TestRecordStreamedWithANeighbour records a tiny job against the real simulator with every request streamed,
// a client that drops workers mid-run and another job on the same server: the second trace's counter runs ahead
// of the finished lengths while requests decode (a counter per iteration, as vLLM's), the simulator's own equals
// them (on finish), and the engines count the neighbour's requests beside the job's.
func TestRecordStreamedWithANeighbour(t *testing.T) {
	t.Parallel()
	gz := "../../../shared/peers/llm-d-inference-sim/llm-d-inference-sim.gz"
	if _, err := os.Stat(gz); err != nil {
		t.Skipf("no simulator beside the repository: %v", err)
	}
	sc := scenario{
		Name: "tiny-stream", Items: 120, Concurrency: 8, Clients: []clientStep{{0.5, 4}}, MaxTokens: fixed(48),
		Neighbour: &neighbour{Clients: 4, From: 0.2, Until: 0.8, MaxTokens: 48, PromptWords: 8, Seed: 9},
		Servers:   one(1, 3, simFlags(16, 5*ms, 2*ms, 1.2)), Every: 100 * ms, Seed: 1, Stream: true,
	}
	out := filepath.Join(t.TempDir(), "tiny.jsonl")
	var log bytes.Buffer
	if err := record(t.Context(), sc, gz, out, &log); err != nil {
		t.Fatalf("record: %v\n%s", err, log.String())
	}
	read := func(path string) []reports.Observation {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		obs, err := sim.ReadTrace(f)
		if err != nil {
			t.Fatalf("ReadTrace(%s): %v", path, err)
		}
		return obs
	}
	onFinish, iter := read(out), read(iterPath(out))
	inFlight, equal := sc.Concurrency+sc.Neighbour.Clients, 0
	if len(onFinish) != len(iter) {
		t.Fatalf("%d lines on finish, %d per iteration; want one of each per sample", len(onFinish), len(iter))
	}
	ahead := false
	for i := range iter {
		a, b := onFinish[i], iter[i]
		if a.T != b.T || a.Done != b.Done || deref(a.FinishedLenSum) != deref(b.FinishedLenSum) {
			t.Fatalf("line %d differs beyond the counter: %+v and %+v", i+1, a, b)
		}
		// The simulator counts a finished request's tokens and observes its length one after the other, not
		// at once: a scrape between the two sees them apart by the requests finishing at that moment, at most
		// one per client (the job's and the neighbour's), each at most MaxTokens.
		if a.GenTokens != nil && a.FinishedLenSum != nil {
			if *a.GenTokens == *a.FinishedLenSum {
				equal++
			} else if math.Abs(*a.GenTokens-*a.FinishedLenSum) > float64(inFlight*48) {
				t.Errorf("line %d: the simulator's counter %v beside finished lengths %v; want them within the requests finishing at once (it counts on finish)", i+1, *a.GenTokens, *a.FinishedLenSum)
			}
		}
		if b.GenTokens != nil && b.FinishedLenSum != nil && *b.GenTokens > *b.FinishedLenSum {
			ahead = true
		}
	}
	if !ahead {
		t.Errorf("the streamed counter never ran ahead of the finished lengths; want it to count tokens as they are decoded")
	}
	if equal < len(onFinish)/2 {
		t.Errorf("the simulator's counter equals the finished lengths on %d of %d lines; want most (it counts on finish, not as it decodes)", equal, len(onFinish))
	}
	last := onFinish[len(onFinish)-1]
	if last.Done != 120 || last.FinishedLenCount == nil || *last.FinishedLenCount <= 120 {
		t.Errorf("last line %+v; want 120 done and the engines counting the neighbour's requests too", last)
	}
	if !strings.Contains(log.String(), "neighbour: sending") {
		t.Errorf("log has no neighbour line:\n%s", log.String())
	}
}

func TestProxyAlternatesReplicas(t *testing.T) {
	var backends []string
	for _, name := range []string{"a", "b"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name+r.URL.Path)
		}))
		defer srv.Close()
		backends = append(backends, srv.URL)
	}
	addr, stop, err := startProxy(backends)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var got []string
	for range 4 {
		resp, err := http.Get(addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, string(b))
	}
	if got[0] == got[1] || got[0] != got[2] || got[1] != got[3] || !strings.HasSuffix(got[0], "/metrics") {
		t.Errorf("replies through the proxy = %q; want the two replicas in turn, path kept", got)
	}
}

// TestReseed checks that -seed 0 is every scenario as listed and that another draw moves every seed, the
// client's and each server's, keeps the servers apart and leaves the job's shape alone.
func TestReseed(t *testing.T) {
	seeds := func(sc scenario) []int64 {
		s := []int64{sc.Seed}
		for _, srv := range sc.Servers {
			s = append(s, srv.Seed)
		}
		return s
	}
	// shape is everything but the seeds; the funcs are compared by what they return.
	shape := func(sc scenario) string {
		sc.Seed = 0
		sc.Servers = append([]serverSpec(nil), sc.Servers...)
		for i := range sc.Servers {
			sc.Servers[i].Seed = 0
		}
		var max []int
		r := rand.New(rand.NewSource(1))
		for i := 0; i < sc.Items; i++ {
			max = append(max, sc.MaxTokens(i, sc.Items, r))
		}
		words := sc.PromptWords != nil
		sc.MaxTokens, sc.PromptWords = nil, nil
		return fmt.Sprintf("%+v max_tokens %v prompt words drawn %v", sc, max, words)
	}
	for _, sc := range scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			orig := seeds(sc)
			if got := seeds(reseed(sc, 0)); !reflect.DeepEqual(got, orig) {
				t.Errorf("reseed(%s, 0) seeds = %v; want %v", sc.Name, got, orig)
			}
			if got, want := shape(reseed(sc, 0)), shape(sc); got != want {
				t.Errorf("reseed(%s, 0) = %s; want %s", sc.Name, got, want)
			}
			used := map[int64]int{}
			for _, s := range orig[1:] {
				used[s] = 0
			}
			for _, n := range []int{2, 3} {
				r := reseed(sc, n)
				got := seeds(r)
				if got[0] == orig[0] {
					t.Errorf("reseed(%s, %d) client seed = %d; want it moved from %d", sc.Name, n, got[0], orig[0])
				}
				for i, s := range got[1:] {
					if s == orig[i+1] {
						t.Errorf("reseed(%s, %d) server %d seed = %d; want it moved", sc.Name, n, i, s)
					}
					if m, ok := used[s]; ok {
						t.Errorf("reseed(%s, %d) server %d seed %d is already used by draw %d; want every server of every draw apart", sc.Name, n, i, s, m)
					}
					used[s] = n
				}
				if a, b := shape(r), shape(sc); a != b {
					t.Errorf("reseed(%s, %d) = %s; want the shape %s", sc.Name, n, a, b)
				}
			}
			if got := seeds(sc); !reflect.DeepEqual(got, orig) {
				t.Errorf("reseed changed the scenario it was given: seeds %v; want %v", got, orig)
			}
		})
	}
}
