package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"runwatch/probes"
)

// signalsTestScrape parses a fixture as a scrape at unix time t.
func signalsTestScrape(t *testing.T, t0 float64, body []byte) SignalSample {
	t.Helper()
	e, err := probes.ParseMetrics(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return SignalSampleOf(t0, e)
}

func signalsTestFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "engines", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signalsTestSim is the llm-d simulator's scrapes after each batch of 40 requests: batches 1–4 as
// it finishes on its own, 5–6 with ignore_eos (every request runs to max_tokens).
func signalsTestSim(t *testing.T, batches ...int) SignalSeries {
	var ss []SignalSample
	for i, b := range batches {
		ss = append(ss, signalsTestScrape(t, float64(1000+60*i), signalsTestFile(t, fmt.Sprintf("llmd_sim_vllm_finish_reason_batch%d.txt", b))))
	}
	return SignalSeries{"http://127.0.0.1:8000/metrics": ss}
}

func TestAssessQualityShares(t *testing.T) {
	q := AssessQuality(SignalSeries{"a": {signalsTestScrape(t, 1, signalsTestFile(t, "vllm_v1_metrics_dp2_constructed.txt"))}}, 2048, QualityConfig{})
	if q == nil {
		t.Fatal("AssessQuality = nil")
	}
	n := 15216.0 + 15178
	if q.Finished != n || math.Abs(q.Shares["length"]-(1203+1190)/n) > 1e-12 || math.Abs(q.Shares["abort"]-4/n) > 1e-12 {
		t.Errorf("Quality = %+v; want %v finished, length %v, abort %v", q, n, (1203+1190)/n, 4/n)
	}
	line := QualityLine(*q)
	for _, want := range []string{"Finishes: 8% of completions hit max_tokens (2,048)", "0.1% aborted", "(of 30,394 finished)"} {
		if !strings.Contains(line, want) {
			t.Errorf("QualityLine = %q; want %q in it", line, want)
		}
	}
	if q.Matters() {
		t.Errorf("Matters() = true for 8%% truncated and 0.01%% aborted")
	}
}

func TestAssessQualityTruncated(t *testing.T) {
	// The simulator after two ignore_eos batches: 102 of 240 hit max_tokens.
	q := AssessQuality(signalsTestSim(t, 6), 64, QualityConfig{})
	line := QualityLine(*q)
	if want := ":scissors: *42% of completions hit max_tokens (64)*: those samples are truncated (of 240 finished)"; line != want {
		t.Errorf("QualityLine = %q; want %q", line, want)
	}
	if !q.Matters() {
		t.Error("Matters() = false for 42% truncated")
	}
}

// One request that ran to max_tokens is not "100% of completions truncated": under minQualityFinished
// finished requests the share is said plainly and is no finding (a new user's first sample read
// ":scissors: *100% of completions hit max_tokens*: those samples are truncated (of 1 finished)").
func TestQualityFewFinished(t *testing.T) {
	q := Quality{Finished: 1, MaxTokens: 64, Shares: map[string]float64{"length": 1}}
	if q.Matters() {
		t.Error("Matters() = true for 1 finished request")
	}
	if line := QualityLine(q); strings.Contains(line, ":scissors:") || !strings.Contains(line, "100% of completions hit max_tokens (64) (of 1 finished)") {
		t.Errorf("QualityLine for 1 finished request = %q; want the share said plainly", line)
	}
	q.Finished = minQualityFinished
	if !q.Matters() {
		t.Errorf("Matters() = false for %d finished, all at max_tokens", minQualityFinished)
	}
}

func TestAssessQualityJump(t *testing.T) {
	tests := []struct {
		name    string
		batches []int
		jumpAt  int // index of the first sample after which a jump shows; -1 never
	}{
		// Batches 1–4 vary (5%, 15%, 28%, 8% of 40 hit max_tokens): noise, not a jump.
		{"steady", []int{1, 2, 3, 4}, -1},
		{"ignore_eos", []int{1, 2, 3, 4, 5, 6}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := signalsTestSim(t, tt.batches...)
			key := "http://127.0.0.1:8000/metrics"
			for i := range all[key] {
				q := AssessQuality(SignalSeries{key: all[key][:i+1]}, 64, QualityConfig{})
				got := q.Jump != nil
				if want := tt.jumpAt >= 0 && i >= tt.jumpAt; got != want {
					t.Fatalf("after batch %d: Jump = %+v; want jump %v", tt.batches[i], q.Jump, want)
				}
				if got && i == tt.jumpAt {
					if q.Jump.Reason != "length" || q.Jump.Now != 1 || q.Jump.NowN != 40 || q.Jump.BeforeN != 160 {
						t.Errorf("Jump = %+v; want length 22/160 -> 40/40", q.Jump)
					}
					line := QualityLine(*q)
					if want := ":warning: completions that hit max_tokens (64) rose from 14% of the 160 before to *100%* of the latest 40 finished requests"; !strings.Contains(line, want) {
						t.Errorf("QualityLine = %q; want %q in it", line, want)
					}
				}
			}
		})
	}
}

func TestAssessQualityRestart(t *testing.T) {
	// Batch 4, then the server restarts and has done batch 1 again: the counters went down, so the
	// second scrape counts 40 new finishes, not -120.
	ss := signalsTestSim(t, 4, 1)
	q := AssessQuality(ss, 0, QualityConfig{})
	if q.Finished != 200 || math.Abs(q.Shares["length"]-24.0/200) > 1e-12 {
		t.Errorf("Quality = %+v; want 200 finished, 24 of them length", q)
	}
	if got := QualityLine(*q); !strings.Contains(got, "hit max_tokens:") && !strings.Contains(got, "hit max_tokens*") {
		t.Errorf("QualityLine without max_tokens = %q; want the plain reason", got)
	}
}

func TestAssessQualityNone(t *testing.T) {
	body := signalsTestFile(t, "vllm_v1_spec_decode_opt125m_ngram_pr24127_constructed.txt")
	if q := AssessQuality(SignalSeries{"a": {signalsTestScrape(t, 1, body)}}, 0, QualityConfig{}); q != nil {
		t.Errorf("AssessQuality without finish counters = %+v; want nil", q)
	}
}

// drafterTestScrape is the PR 24127 exposition with every counter multiplied: scale[0] for drafts
// and draft tokens, scale[1] for accepted tokens.
func drafterTestScrape(t *testing.T, t0 float64, drafts, accepted float64) SignalSample {
	body := string(signalsTestFile(t, "vllm_v1_spec_decode_opt125m_ngram_pr24127_constructed.txt"))
	num := regexp.MustCompile(`(?m)^(vllm:spec_decode_num_(drafts|draft_tokens|accepted_tokens|accepted_tokens_per_pos)_total\{[^}]*\}) ([0-9.]+)$`)
	body = num.ReplaceAllStringFunc(body, func(line string) string {
		m := num.FindStringSubmatch(line)
		v, _ := strconv.ParseFloat(m[3], 64)
		f := drafts
		if strings.HasPrefix(m[2], "accepted") {
			f = accepted
		}
		return fmt.Sprintf("%s %g", m[1], v*f)
	})
	return signalsTestScrape(t, t0, []byte(body))
}

func TestAssessDrafter(t *testing.T) {
	d := AssessDrafter(SignalSeries{"a": {drafterTestScrape(t, 1, 1, 1)}}, DrafterConfig{})
	if d == nil {
		t.Fatal("AssessDrafter = nil")
	}
	// vLLM's own log line for these counters (PR 24127): "Draft acceptance rate: 88.8%, Mean
	// acceptance length: 5.44, ... Per-position acceptance rate: 0.983, 0.949, 0.915, 0.881, 0.712".
	if fmt.Sprintf("%.1f%% %.2f", d.AcceptRate*100, d.TokensPerStep) != "88.8% 5.44" {
		t.Errorf("AcceptRate %v, TokensPerStep %v; want vLLM's 88.8%% and 5.44", d.AcceptRate, d.TokensPerStep)
	}
	var pos []string
	for _, v := range d.PerPos {
		pos = append(pos, fmt.Sprintf("%.3f", v))
	}
	if got := strings.Join(pos, ", "); got != "0.983, 0.949, 0.915, 0.881, 0.712" {
		t.Errorf("PerPos = %s; want vLLM's 0.983, 0.949, 0.915, 0.881, 0.712", got)
	}
	if want := ":zap: Drafter: 89% of draft tokens accepted, 5.44 tokens per step (by draft position: 98% 95% 92% 88% 71%) over 295 draft tokens"; DrafterLine(*d) != want {
		t.Errorf("DrafterLine = %q; want %q", DrafterLine(*d), want)
	}
}

func TestAssessDrafterDrop(t *testing.T) {
	tests := []struct {
		name     string
		accepted []float64 // accepted-token multiplier after each scrape; drafts grow by 4 each time
		dropAt   int
	}{
		{"steady", []float64{1, 5, 9, 13, 17}, -1},
		// From the fourth scrape on, the 4x more drafts yield only 1x more accepted tokens.
		{"drop", []float64{1, 5, 9, 10, 11}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ss []SignalSample
			for i, a := range tt.accepted {
				ss = append(ss, drafterTestScrape(t, float64(i*60), float64(1+4*i), a))
				d := AssessDrafter(SignalSeries{"a": ss}, DrafterConfig{})
				if got, want := d.Drop != nil, tt.dropAt >= 0 && i >= tt.dropAt; got != want {
					t.Fatalf("after scrape %d: Drop = %+v; want drop %v", i, d.Drop, want)
				}
				if i == tt.dropAt {
					if math.Abs(d.Drop.Before-262.0/295) > 1e-9 || math.Abs(d.Drop.Now-262.0/(4*295)) > 1e-9 {
						t.Errorf("Drop = %+v; want 88.8%% -> 22.2%%", d.Drop)
					}
					if !strings.Contains(DrafterLine(*d), ":warning: drafter acceptance fell from 89% of the 2,655 draft tokens before to *22%* of the latest 1,180") {
						t.Errorf("DrafterLine = %q", DrafterLine(*d))
					}
				}
			}
		})
	}
}

func TestAssessDrafterGauges(t *testing.T) {
	body := "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 3\n# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate 0.62\n# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length 2.86\n"
	d := AssessDrafter(SignalSeries{"a": {signalsTestScrape(t, 1, []byte(body))}}, DrafterConfig{})
	if d == nil || !d.Gauge {
		t.Fatalf("AssessDrafter = %+v; want SGLang's gauges", d)
	}
	if want := ":zap: Drafter: 62% of draft tokens accepted, 2.86 tokens per step _(the engine's running average)_"; DrafterLine(*d) != want {
		t.Errorf("DrafterLine = %q; want %q", DrafterLine(*d), want)
	}
	if d := AssessDrafter(signalsTestSim(t, 1), DrafterConfig{}); d != nil {
		t.Errorf("AssessDrafter without a drafter = %+v; want nil", d)
	}
}

// TestRenderSignalsGolden renders a status with every engine signal, and a writes answer with a
// writer another host's exporter reported, in text and Block Kit.
func TestRenderSignalsGolden(t *testing.T) {
	rs, now := sampleStatus()
	rs.Quality = AssessQuality(signalsTestSim(t, 1, 2, 3, 4, 5), 64, QualityConfig{})
	rs.Drafter = AssessDrafter(SignalSeries{"a": {drafterTestScrape(t, 1, 1, 1)}}, DrafterConfig{})
	perTok := int64(3*7168*2 + 8)
	rs.Measured = []MeasuredPlan{MeasurePlan(rs.Plans[0], probes.Written{Dir: "/data/hs", Files: 41, Safetensors: 40,
		SafetensorsBytes: 51200 * perTok, Bytes: 51200*perTok + 4096, TokensInFiles: 51200, HeadersRead: 32}, 0.49)}
	rs.Engines = append(rs.Engines, EngineStatus{URL: "http://gpu-3:8000/metrics", Kind: "vllm", OK: true, Engines: 1, Running: fp(3), Waiting: fp(0),
		Missing: []string{"no vllm:kv_cache_usage_perc (KV cache usage); it exports vllm:gpu_cache_usage_perc instead (vLLM's V1 engine renamed it)"}})
	st := rs.Storage
	st.Writers = append(st.Writers, WriterInfo{Command: "python3", File: "/shared", Mount: "/shared", Protected: true, ProtectedPath: "/shared", Host: "gpu-node-7", Processes: 2})
	cases := map[string]Message{
		"status_signals": RenderStatus(rs, now, time.UTC),
		"writes_remote":  AnswerWrites(rs.Name, st, Target{}),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			golden(t, name+".txt.golden", []byte(m.Text()+"\n"))
			blocks, err := json.MarshalIndent(m.Blocks(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON(t, name+".blocks.golden.json", blocks)
		})
	}
}

func TestRunEndAndQualityAt(t *testing.T) {
	n := func(v float64) *float64 { return &v }
	engines := func(running ...*float64) []EngineStatus {
		var out []EngineStatus
		for _, r := range running {
			out = append(out, EngineStatus{OK: true, Running: r})
		}
		return out
	}
	tests := []struct {
		name string
		r    RunStatus
		want RunEnd
	}{
		{"items wait to start", RunStatus{Progress: &Progress{Done: 700, Total: 1000}, Engines: engines(n(100), n(100))}, EndBusy},
		{"as many left as in flight on two engines", RunStatus{Progress: &Progress{Done: 800, Total: 1000}, Engines: engines(n(100), n(100))}, EndLastBatch},
		{"in flight unknown", RunStatus{Progress: &Progress{Done: 990, Total: 1000}, Engines: engines(nil)}, EndBusy},
		{"no total", RunStatus{Progress: &Progress{Done: 990}, Engines: engines(n(200))}, EndBusy},
		{"all done", RunStatus{Progress: &Progress{Done: 1000, Total: 1000}}, EndDone},
		{"the estimate says done", RunStatus{ETA: &ETA{State: StateDone}}, EndDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.End(); got != tt.want {
				t.Errorf("End() = %v; want %v", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		reason string
		end    RunEnd
		kept   bool
	}{
		{"length", EndBusy, true}, {"length", EndLastBatch, false}, {"length", EndDone, false},
		{"abort", EndLastBatch, true}, {"abort", EndDone, false},
	} {
		q := &Quality{Finished: 100, Shares: map[string]float64{tt.reason: 0.2}, Jump: &ShareJump{Reason: tt.reason, Now: 0.5}}
		got := q.At(tt.end)
		if (got.Jump != nil) != tt.kept || got.Shares[tt.reason] != 0.2 || q.Jump == nil {
			t.Errorf("Quality{Jump: %s}.At(%v) = %+v; want the jump kept %v, the shares kept and q unchanged", tt.reason, tt.end, got, tt.kept)
		}
	}
}

func TestEngineLineServersAndEngines(t *testing.T) {
	n := func(v float64) *float64 { return &v }
	server := func(url string, ok bool, engines int) EngineStatus {
		return EngineStatus{URL: url, Kind: "vllm", OK: ok, Engines: engines, Running: n(100), Waiting: n(10)}
	}
	tests := []struct {
		name string
		es   []EngineStatus
		want string
	}{
		{"one server", []EngineStatus{server("http://a/metrics", true, 1)}, "Servers: 1 of 1 up · 100 running · 10 waiting"},
		{"engine count unknown", []EngineStatus{server("http://a/metrics", true, 0)}, "Servers: 1 of 1 up · 100 running · 10 waiting"},
		{"one server, two data-parallel engines", []EngineStatus{server("http://a/metrics", true, 2)}, "Servers: 1 of 1 up (2 data-parallel engines) · 100 running · 10 waiting"},
		{"two servers", []EngineStatus{server("http://a/metrics", true, 1), server("http://b/metrics", true, 1)}, "Servers: 2 of 2 up · 200 running · 20 waiting"},
		{"two servers of two engines", []EngineStatus{server("http://a/metrics", true, 2), server("http://b/metrics", true, 2)}, "Servers: 2 of 2 up (4 engines between them) · 200 running · 20 waiting"},
		{"one of two up", []EngineStatus{server("http://a/metrics", true, 2), {URL: "http://b/metrics", Error: "refused"}}, "Servers: 1 of 2 up (2 data-parallel engines) · 100 running · 10 waiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlainText(EngineLineBeside(RunStatus{Engines: tt.es}, time.UTC)); !strings.HasPrefix(got, tt.want) {
				t.Errorf("EngineLineBeside = %q; want it to start %q", got, tt.want)
			}
		})
	}
}
