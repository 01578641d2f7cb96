package fake

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// The recording VLLM replays: the third-party llm-d-inference-sim's /metrics, scraped three times 2 s
// apart while 32 clients kept its 16 slots full (probes/testdata/SOURCES.md says how).
var recording = []string{"llmd_sim_vllm_busy1.txt", "llmd_sim_vllm_busy2.txt", "llmd_sim_vllm_busy3.txt"}

// RecordedTokensPerScrape is how many tokens the recording's engine generated between two of its
// scrapes: VLLM's pace unless VLLMOptions says otherwise.
const RecordedTokensPerScrape = (20925 - 13326) / 2.0

// VLLMOptions shape a VLLM; the zero value replays the recording at its own pace.
type VLLMOptions struct {
	// TokensPerScrape sets the pace: the generated-token counter moves on by this much per scrape, every
	// other counter, histogram and summary in proportion. 0: the recording's (RecordedTokensPerScrape).
	TokensPerScrape float64
	// Extra is appended to every body (a process_start_time_seconds line, say).
	Extra func() string
}

// Replay is a recording of a real engine under load, served the way a busy server's /metrics moves:
// scrape 1 is the first recording as it was, and each later one the same text with every counter,
// histogram and summary moved on by one step (the recorded pace between the first recording and the
// last, per scrape). Gauges stay as recorded: 16 requests running, 16 waiting.
type Replay struct {
	opts  VLLMOptions
	lines []string  // the first recording's lines
	step  []float64 // per line: how much its value moves per scrape (0: a gauge, a comment)
}

// NewReplay reads the recording.
func NewReplay(t testing.TB, o VLLMOptions) *Replay {
	t.Helper()
	r := &Replay{opts: o}
	r.load(t)
	return r
}

// Body is what the n-th scrape (from 1) serves.
func (r *Replay) Body(n int) []byte {
	var b bytes.Buffer
	for i, l := range r.lines {
		if r.step[i] == 0 || n <= 1 {
			b.WriteString(l)
			b.WriteByte('\n')
			continue
		}
		name, val := splitSample(l)
		x, _ := strconv.ParseFloat(val, 64)
		b.WriteString(name)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(x+float64(n-1)*r.step[i], 'g', -1, 64))
		b.WriteByte('\n')
	}
	if r.opts.Extra != nil {
		b.WriteString(r.opts.Extra())
	}
	return b.Bytes()
}

// VLLM is a vLLM server's /metrics replaying the recording (Replay), one step per scrape. The test
// may make it start over (Restart), as a restarted server's counters do.
type VLLM struct {
	*httptest.Server
	*Replay
	scrapes atomic.Int64 // since the start, or the last Restart
	total   atomic.Int64 // in all
}

// NewVLLM serves a VLLM until the test ends.
func NewVLLM(t testing.TB, o VLLMOptions) *VLLM {
	t.Helper()
	v := &VLLM{Replay: NewReplay(t, o)}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		w.Write(v.Body(int(v.scrapes.Add(1))))
		v.total.Add(1)
	}))
	t.Cleanup(v.Close)
	return v
}

// ContentType is the Content-Type the recorded engine answered with.
const ContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// MetricsURL is the server's /metrics URL.
func (v *VLLM) MetricsURL() string { return v.URL + "/metrics" }

// Scrapes is how many times the server has been scraped.
func (v *VLLM) Scrapes() int64 { return v.total.Load() }

// Restart makes the counters start over from the first recording, as a restarted server's do.
func (v *VLLM) Restart() { v.scrapes.Store(0) }

// load reads the recording and works out each sample's step from its first and last scrape.
func (r *Replay) load(t testing.TB) {
	t.Helper()
	var recs [][]string
	for _, name := range recording {
		b := Fixture(t, name)
		recs = append(recs, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	}
	first, last := recs[0], recs[len(recs)-1]
	if len(first) != len(last) {
		t.Fatalf("the recordings %v do not have the same lines", recording)
	}
	types := map[string]string{} // family -> its # TYPE
	r.lines, r.step = first, make([]float64, len(first))
	var genStep float64
	for i, l := range first {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		name, a := splitSample(l)
		lname, b := splitSample(last[i])
		if name != lname {
			t.Fatalf("the recordings %v differ at line %d: %q, %q", recording, i+1, l, last[i])
		}
		if kind := types[family(name, types)]; kind == "gauge" || kind == "" {
			continue
		}
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("the recordings %v: line %d has no value: %q", recording, i+1, l)
		}
		r.step[i] = (y - x) / float64(len(recs)-1)
		if strings.HasPrefix(name, "vllm:generation_tokens_total") {
			genStep = r.step[i]
		}
	}
	if r.opts.TokensPerScrape > 0 && genStep > 0 {
		for i := range r.step {
			r.step[i] *= r.opts.TokensPerScrape / genStep
		}
	}
}

// splitSample splits an exposition line into its series (name and labels) and its value.
func splitSample(l string) (series, value string) {
	i := strings.LastIndexByte(l, ' ')
	if i < 0 {
		return l, ""
	}
	return l[:i], l[i+1:]
}

// family is the # TYPE family a series belongs to: its name, or the name less a histogram's or a
// summary's suffix.
func family(series string, types map[string]string) string {
	name, _, _ := strings.Cut(series, "{")
	if _, ok := types[name]; ok {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base
		}
	}
	return name
}

// Testdata is the path of name in probes/testdata, where the recorded fixtures are (real engines'
// metrics, mount tables, logs, a /proc tree; its SOURCES.md says where each came from).
func Testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "probes", "testdata", name)
}

// Fixture reads a recorded fixture of probes/testdata.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(Testdata(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
