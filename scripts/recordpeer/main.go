// Command recordpeer records a job run against the third-party vLLM simulator (llm-d-inference-sim) as a
// runwatch replay trace: the ground truth for the estimator's accuracy on jobs nobody here designed.
//
// It unpacks the simulator, starts it on 127.0.0.1 with the scenario's flags, waits for /health/ready, sends
// the scenario's prompts with a fixed number of client workers (retrying failures), logs progress as a batch
// job does ("Progress: N/M ..." on stderr), samples every server's /metrics at the scenario's interval, and
// writes one JSON line per sample in the format `bot replay --trace` reads. The last line is taken when the last
// item finished: the trace's finish is the true finish. Counters are summed over servers, as runwatch sums
// engines, and folded as its sampler folds them (restarts counted; traces recorded before were written with the
// servers' raw counters and are folded when read). This simulator counts generated tokens only when a request
// finishes; a scenario with Stream sends every request streamed and writes a second trace, NAME.iter.jsonl,
// whose counter is the tokens streamed back as they are decoded, as vLLM counts them. The second corpus
// (second.go, reports/testdata/peer2) adds clients that change concurrency, a neighbour job and a throttle.
//
// Run it from the repository root:
//
//	go run ./scripts/recordpeer -list
//	go run ./scripts/recordpeer -scenario steady -out reports/testdata/peer/steady.jsonl
//
// -seed N (N > 0) records another draw of the scenario: the client's seed and every server's are moved by
// 100*N (the servers together, so they still differ), everything else about the job stays as it is; -seed 0,
// the default, is the scenario as listed:
//
//	go run ./scripts/recordpeer -scenario steady -seed 2 -out reports/testdata/peer/seeds/steady.s2.jsonl
//
// The committed traces and how each was recorded are listed in reports/testdata/peer/SOURCES.md;
// scripts/recordpeer.sh records them all (SEED=N for the reseeded ones), each where -path says it is kept (the
// held-out jobs of heldout.go in reports/testdata/peer/heldout/, apart from the corpus).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"runwatch/reports"
	"runwatch/reports/estimate"
	"runwatch/sim"
)

func main() {
	name := flag.String("scenario", "", "scenario to record (see -list)")
	out := flag.String("out", "", "trace file to write")
	gz := flag.String("sim", "../shared/peers/llm-d-inference-sim/llm-d-inference-sim.gz", "the gzipped simulator binary")
	list := flag.Bool("list", false, "list the scenarios and exit")
	seed := flag.Int("seed", 0, "record draw N of the scenario: every seed it uses moved by 100*N (0: the scenario as listed)")
	path := flag.Bool("path", false, "print where the trace of -scenario (and -seed) is kept, from the repository root, and exit")
	flag.Parse()
	if *list {
		for _, s := range append(append(append(scenarios(), heldout()...), second()...), third()...) {
			fmt.Printf("%-16s %5d items, %3d clients: %s\n", s.Name, s.Items, s.Concurrency, s.About)
		}
		return
	}
	sc, ok := find(*name)
	if ok && *path && *seed >= 0 {
		fmt.Println(tracePath(sc.Name, *seed))
		return
	}
	if !ok || *out == "" || *seed < 0 {
		fmt.Fprintln(os.Stderr, "usage: recordpeer -scenario NAME [-seed N] -out FILE, or -path instead of -out to print where its trace is kept (recordpeer -list names the scenarios; N >= 0)")
		os.Exit(2)
	}
	sc = reseed(sc, *seed)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := record(ctx, sc, *gz, *out, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "recordpeer:", err)
		cancel()
		os.Exit(1)
	}
}

// record runs sc to its end and writes its trace to out.
func record(ctx context.Context, sc scenario, gz, out string, w io.Writer) error {
	log := &lockedWriter{w: w} // the sampler and the restart both log
	dir, err := os.MkdirTemp("", "recordpeer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := unpack(gz, dir)
	if err != nil {
		return err
	}
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	var urls []string
	for i, spec := range sc.Servers {
		port, err := freePorts(spec.Ranks)
		if err != nil {
			return err
		}
		s := &server{bin: bin, args: spec.Flags, port: port, ranks: spec.Ranks, seed: spec.Seed,
			log: filepath.Join(dir, fmt.Sprintf("server%d.log", i))}
		if err := s.start(); err != nil {
			return err
		}
		servers = append(servers, s)
		// No deadline of its own: a process that cannot start exits, and ^C ends the wait.
		if err := s.ready(ctx, http.DefaultClient); err != nil {
			return err
		}
		urls = append(urls, s.urls()...)
	}
	if sc.OneURL {
		addr, stop, err := startProxy(urls)
		if err != nil {
			return err
		}
		defer stop()
		urls = []string{addr}
	}
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: sc.Concurrency + 8},
		Timeout:   5 * time.Minute,
	}
	j := newJob(sc, urls, client)
	if sc.Stream {
		j.meter = newMeter()
	}
	jctx, jcancel := context.WithCancel(ctx)
	defer jcancel()
	var wg sync.WaitGroup
	if nb := sc.Neighbour; nb != nil {
		wg.Go(func() { neighbourJob(jctx, j, *nb, client, log) })
		if nb.Lead > 0 {
			select {
			case <-time.After(nb.Lead):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	j.start = time.Now()
	ran := make(chan struct{})
	go func() { j.run(jctx); close(ran) }()
	wg.Go(func() { disrupt(jctx, j, servers[0], sc, log, jcancel) })
	if t := sc.Throttle; t != nil {
		wg.Go(func() { throttleServer(jctx, j, servers[0], *t, log) })
	}
	obs, iter := sample(jctx, j, urls, sc.Every, ran, log)
	jcancel()
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if last := obs[len(obs)-1]; last.Done != last.Total {
		return fmt.Errorf("job ended at %d/%d", last.Done, last.Total)
	}
	// Written in the one form histories have: the counters folded (estimate.Fold), restarts and steps back
	// counted, as runwatch's sampler records them.
	if err := writeTrace(out, estimate.Fold(obs), log); err != nil {
		return err
	}
	if iter != nil {
		return writeTrace(iterPath(out), estimate.Fold(iter), log)
	}
	return nil
}

// iterPath is where the per-iteration trace of a recording written to out goes: NAME.iter.jsonl beside it.
func iterPath(out string) string {
	return strings.TrimSuffix(out, ".jsonl") + ".iter.jsonl"
}

// writeTrace writes obs to out atomically.
func writeTrace(out string, obs []reports.Observation, log io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := sim.WriteTrace(f, obs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s: %d lines, finish at %.1fs\n", out, len(obs), obs[len(obs)-1].T)
	return os.Rename(tmp, out)
}

// disrupt does to the first server what the scenario says: kill it and start it again (RestartAt), or stop
// it answering for a while (PauseAt: SIGSTOP, then SIGCONT).
func disrupt(ctx context.Context, j *job, s *server, sc scenario, log io.Writer, fail func()) {
	at, what := sc.RestartAt, "restart"
	if sc.PauseAt > 0 {
		at, what = sc.PauseAt, "pause"
	}
	if at == 0 || !j.waitDone(ctx, int64(at*float64(sc.Items))) {
		return
	}
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if what == "pause" {
		fmt.Fprintf(log, "pause: stopping the server (SIGSTOP) at %.1fs\n", time.Since(j.start).Seconds())
		s.cmd.Process.Signal(syscall.SIGSTOP)
		wait(sc.Pause)
		s.cmd.Process.Signal(syscall.SIGCONT)
		fmt.Fprintf(log, "pause: continued (SIGCONT) at %.1fs\n", time.Since(j.start).Seconds())
		return
	}
	fmt.Fprintf(log, "restart: killing the server at %.1fs\n", time.Since(j.start).Seconds())
	s.stop()
	if j.meter != nil {
		for _, u := range s.urls() {
			j.meter.restart(u)
		}
	}
	if !wait(sc.Downtime) {
		return
	}
	s.seed += 1000
	if err := s.start(); err != nil {
		fmt.Fprintln(log, "restart:", err)
		fail()
		return
	}
	fmt.Fprintf(log, "restart: started again at %.1fs\n", time.Since(j.start).Seconds())
}

// sample takes a trace line every `every` until the job has run, then one at the moment the last item
// finished. With a meter (Stream) it also returns the same lines with the streamed token count as the token
// counter (perIteration); nil without.
func sample(ctx context.Context, j *job, urls []string, every time.Duration, ran <-chan struct{}, log io.Writer) (obs, iter []reports.Observation) {
	m := &http.Client{Timeout: 2 * time.Second}
	add := func(t float64, st jobState, sc []scrape) {
		o := observe(t, st, sc)
		obs = append(obs, o)
		if j.meter != nil {
			iter = append(iter, perIteration(o, sc))
		}
	}
	// The job's state is read after the scrape returns, so that a scrape a stopped server holds up to its
	// timeout is stamped with the time it was answered, not the tick it began on.
	take := func() {
		sc := scrapeAll(ctx, m, urls, j.meter)
		at := time.Now()
		st := j.state(at)
		fmt.Fprintln(log, progressLine(st))
		add(at.Sub(j.start).Seconds(), st, sc)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	add(0, j.state(j.start), scrapeAll(ctx, m, urls, j.meter))
	for {
		select {
		case <-ran:
			fin := j.finished()
			if fin.IsZero() {
				return obs, iter
			}
			// The counters move when a request finishes; give the servers a moment to count the last one.
			time.Sleep(300 * time.Millisecond)
			st := j.state(fin)
			fmt.Fprintln(log, progressLine(st))
			t := fin.Sub(j.start).Seconds()
			// A line taken while the last item finished is stamped after the finish: the finish line replaces it.
			for len(obs) > 0 && obs[len(obs)-1].T >= round(t, 1000) {
				obs = obs[:len(obs)-1]
				if iter != nil {
					iter = iter[:len(iter)-1]
				}
			}
			add(t, st, scrapeAll(ctx, m, urls, j.meter))
			return obs, iter
		case <-tick.C:
			take()
		}
	}
}

// scrapeAll reads every server's /metrics, and with a meter the tokens streamed from each as it answered.
func scrapeAll(ctx context.Context, c *http.Client, urls []string, mt *meter) []scrape {
	out := make([]scrape, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			out[i] = scrapeOne(ctx, c, u+"/metrics")
			out[i].Streamed = math.NaN()
			if mt != nil {
				out[i].Streamed = mt.read(u)
			}
		})
	}
	wg.Wait()
	return out
}

func scrapeOne(ctx context.Context, c *http.Client, url string) scrape {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return scrape{Err: err}
	}
	resp, err := c.Do(req)
	if err != nil {
		return scrape{Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return scrape{Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return scrape{Err: fmt.Errorf("HTTP %s", resp.Status)}
	}
	s, err := parseScrape(body)
	if err != nil {
		return scrape{Err: err}
	}
	return s
}

// lockedWriter serialises writes from goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
