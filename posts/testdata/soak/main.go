// Command soak drives runwatch's sampler through long simulated time: several simulated vLLM jobs,
// each with a progress log and a /metrics endpoint, sampled every 30 simulated seconds on a fake
// clock, with questions asked along the way. It does the sampler's real work (log tails, scrapes
// over loopback HTTP, the /proc scans, statfs, state saves) without sleeping between samples, and
// prints one JSON line per simulated hour and a summary: memory, state directory size, and what
// answering costs. TestSoak (posts/sampler_test.go) builds it without the race detector and checks
// the figures.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/sim"
	"runwatch/state"
)

// hour is one simulated hour's figures.
type hour struct {
	Hour         int     `json:"hour"`
	RSSMiB       float64 `json:"rss_mib"`  // VmRSS now
	PeakMiB      float64 `json:"peak_mib"` // VmHWM: the most resident memory so far
	HeapMiB      float64 `json:"heap_mib"` // live heap after a GC
	StateMaxKiB  float64 `json:"state_max_kib"`
	StateKiB     float64 `json:"state_kib"`
	History      int     `json:"history"`       // points in the first run's history
	AskMs        float64 `json:"ask_ms"`        // median answer time this hour
	AskKiB       float64 `json:"ask_kib"`       // mean bytes allocated per answer this hour
	TickMs       float64 `json:"tick_ms"`       // mean wall time of one sample of every run
	Posts        int     `json:"posts"`         // warnings delivered so far
	AlertsActive int     `json:"alerts_active"` // conditions the alerter tracks
}

func main() {
	runs := flag.Int("runs", 10, "simulated runs")
	hours := flag.Int("hours", 168, "simulated hours")
	every := flag.Duration("interval", 30*time.Second, "sample interval (simulated)")
	askEvery := flag.Int("ask-every", 10, "ask a question every this many samples")
	maxHistory := flag.Int("max-history", 0, "points of history kept per run (0: the monitor's default)")
	dir := flag.String("dir", "", "working directory (logs, state)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "soak: -dir is required")
		os.Exit(2)
	}
	if err := soak(*runs, *hours, *every, *askEvery, *maxHistory, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// job is one simulated run's job, its log and its endpoint.
type job struct {
	mu  sync.Mutex
	job *sim.Job
	log *os.File
	w   *bufio.Writer
}

func soak(runs, hours int, every time.Duration, askEvery, maxHistory int, dir string) error {
	stateDir := filepath.Join(dir, "state")
	sd, err := state.Open(stateDir)
	if err != nil {
		return err
	}
	jobs := make([]*job, runs)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	file := &config.File{Source: "soak"}
	for i := range runs {
		// A week-long job: 900,000 prompts at about 1.4 a second.
		s := sim.Scenario{Name: "soak", Items: 900_000, Concurrency: 200, QueueDepth: 56, MaxTokens: 4096, MeanTokens: 1000,
			Sigma: 0.8, PromptTokens: 350, PeakTokensPerS: 1400, SingleTokensPerS: 60, Jitter: 0.04, Engines: 2}
		j := &job{job: sim.NewJob(s, int64(i+1))}
		runDir := filepath.Join(dir, fmt.Sprintf("run-%d", i))
		if err := os.MkdirAll(filepath.Join(runDir, "out"), 0o755); err != nil {
			return err
		}
		if j.log, err = os.Create(filepath.Join(runDir, "gen.log")); err != nil {
			return err
		}
		defer j.log.Close()
		j.w = bufio.NewWriter(j.log)
		jobs[i] = j
		path := fmt.Sprintf("/run-%d/metrics", i)
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			j.mu.Lock()
			b := j.job.Metrics()
			j.mu.Unlock()
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write(b)
		})
		file.Runs = append(file.Runs, config.Run{
			Name: fmt.Sprintf("run-%d", i), Channel: fmt.Sprintf("#run-%d", i),
			Log: j.log.Name(), Metrics: []string{srv.URL + path},
			Outputs: []string{filepath.Join(runDir, "out")}, Protected: []string{filepath.Join(dir, "shared")},
			Stages: []config.Stage{{Name: "generate", Check: "progress"}, {Name: "outputs", Check: "growing", Path: filepath.Join(runDir, "out")}},
		})
	}

	var mu sync.Mutex
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	m, problems, err := monitor.New(file, monitor.Options{State: sd, Now: clock, RateWindow: -1, ProbeTimeout: 5 * time.Second, MaxHistory: maxHistory})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("monitor: %v", problems)
	}
	bot := conversation.NewBot(m, time.UTC, config.Env{})
	sampler := posts.NewSampler(bot, every, slog.New(slog.DiscardHandler))
	sampler.State = sd
	delivered := 0
	sampler.Deliver = func(ctx context.Context, p posts.Post) (string, error) {
		delivered++
		return strconv.Itoa(delivered), nil
	}
	ctx := context.Background()
	questions := []string{"ETA?", "how fast are we going?", "is it stuck?", "status"}
	perHour := int(time.Hour / every)
	enc := json.NewEncoder(os.Stdout)
	var asks []float64
	var askBytes, askN uint64
	var tickWall time.Duration
	for tick := 1; tick <= hours*perHour; tick++ {
		mu.Lock()
		now = now.Add(every)
		mu.Unlock()
		for _, j := range jobs {
			j.job.Advance(every.Seconds())
			fmt.Fprintln(j.w, j.job.ProgressLine())
			j.w.Flush()
		}
		start := time.Now()
		sampler.Tick(ctx)
		tickWall += time.Since(start)

		if tick%askEvery == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			q := questions[(tick/askEvery)%len(questions)]
			start := time.Now()
			rep := bot.Ask(ctx, conversation.Request{Text: q + " " + file.Runs[tick%runs].Name, Source: "console"})
			asks = append(asks, float64(time.Since(start).Microseconds())/1000)
			runtime.ReadMemStats(&ms)
			askBytes += ms.TotalAlloc - before
			askN++
			if rep.Message.Text() == "" {
				return fmt.Errorf("empty answer to %q", q)
			}
		}
		if tick%perHour == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			rss, peak := procStatus()
			h := hour{Hour: tick / perHour, RSSMiB: rss, PeakMiB: peak, HeapMiB: float64(ms.HeapAlloc) / (1 << 20),
				History: len(m.History(file.Runs[0].Name)), TickMs: float64(tickWall.Microseconds()) / 1000 / float64(perHour),
				Posts: delivered, AlertsActive: len(sampler.Alerter.State.Active)}
			for _, r := range file.Runs {
				if fi, err := os.Stat(filepath.Join(stateDir, "run-"+r.Name+".json")); err == nil {
					h.StateMaxKiB = max(h.StateMaxKiB, float64(fi.Size())/1024)
				}
			}
			if n, err := sd.Size(); err == nil {
				h.StateKiB = float64(n) / 1024
			}
			if len(asks) > 0 {
				slices.Sort(asks)
				h.AskMs = asks[len(asks)/2]
				h.AskKiB = float64(askBytes) / float64(askN) / 1024
			}
			if err := enc.Encode(h); err != nil {
				return err
			}
			asks, askBytes, askN, tickWall = asks[:0], 0, 0, 0
		}
	}
	return nil
}

// procStatus reads this process's resident memory now and at its peak, in MiB.
func procStatus() (rss, peak float64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[0], 64)
		switch k {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return rss, peak
}
