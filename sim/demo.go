package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"runwatch/probes"
)

// demoTick is how often (real time) the demo advances its job and logs its progress.
const demoTick = 250 * time.Millisecond

// demoBytesPerToken is how many bytes of output a generated token becomes.
const demoBytesPerToken = 4

// demoItemsPerFile is how many finished items go into one output part file.
const demoItemsPerFile = 2000

// DemoOptions configures StartDemo.
type DemoOptions struct {
	Dir      string   // where the log and the output directory go (created if missing)
	Speed    float64  // sim seconds per real second (default 60)
	Scenario Scenario // the job (a zero Scenario runs DemoScenario)
	Seed     int64
	// StartAt is how much simulated time the job has already run when the demo starts: the job is
	// fast-forwarded to it, its log and output written as they would have been, so the first questions
	// find progress, a rate and history to answer from (0 starts at the beginning).
	StartAt time.Duration
}

// Demo is a simulated job running at accelerated time: an HTTP server on 127.0.0.1 serving the inference
// engine's /metrics and /health (503 while the simulated server restarts), a progress log written the way the
// generation script writes it, and an output directory that receives about 4 bytes per generated token. Its
// clock is simulated: Now runs Speed times faster than the wall clock from the moment the demo starts, and
// the log's elapsed time and the metrics' timestamps are on that clock, so the rates are the scenario's
// (about 1,400 tok/s) and a five-hour job reads as five hours while it takes five minutes.
type Demo struct {
	MetricsURL, HealthURL, LogPath, OutputDir string

	start time.Time // wall-clock start; sim second 0 is this instant on the simulated clock
	speed float64

	mu     sync.Mutex
	job    *Job
	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	log    *os.File
	part   *os.File
	partW  *bufio.Writer
	parts  int
	items  int
	err    error // the first write error; the demo stops writing after it

	closeOnce sync.Once
	closeErr  error
}

// StartDemo starts the demo job and its server. The job runs until ctx is cancelled or Close is called; once
// every item is done the server keeps answering with the final counts.
func StartDemo(ctx context.Context, o DemoOptions) (*Demo, error) {
	if o.Speed <= 0 {
		o.Speed = 60
	}
	if o.Scenario.Items == 0 {
		o.Scenario = DemoScenario()
	}
	if o.Dir == "" {
		return nil, errors.New("start demo: no directory")
	}
	d := &Demo{
		LogPath:   filepath.Join(o.Dir, "generate.log"),
		OutputDir: filepath.Join(o.Dir, "output"),
		job:       NewJob(o.Scenario, o.Seed),
		done:      make(chan struct{}),
	}
	d.start, d.speed = time.Now(), o.Speed
	// Sim second StartAt is now: the simulated clock (Now) and the job's timestamps agree.
	d.job.epoch = probes.UnixSeconds(d.start) - o.StartAt.Seconds()
	d.job.collect = true
	if err := os.MkdirAll(d.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("start demo: %w", err)
	}
	var err error
	if d.log, err = os.OpenFile(d.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("start demo: %w", err)
	}
	if err := d.fastForward(o.StartAt.Seconds()); err != nil {
		d.log.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.log.Close()
		return nil, fmt.Errorf("start demo: %w", err)
	}
	base := "http://" + ln.Addr().String()
	d.MetricsURL, d.HealthURL = base+"/metrics", base+"/health"
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", d.serveMetrics)
	mux.HandleFunc("/health", d.serveHealth)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go d.srv.Serve(ln)

	ctx, d.cancel = context.WithCancel(ctx)
	go d.run(ctx, o.Speed)
	return d, nil
}

// fastForward runs the job to sim second until, writing a log line every demoForwardStep and the output as
// it finishes, as if the demo had been running all along.
func (d *Demo) fastForward(until float64) error {
	for d.job.Now() < until && !d.job.Done() {
		d.job.Advance(math.Min(demoForwardStep, until-d.job.Now()))
		d.writeOutput()
		if _, err := fmt.Fprintln(d.log, d.job.ProgressLine()); err != nil {
			return fmt.Errorf("start demo: write %s: %w", d.LogPath, err)
		}
	}
	if d.err != nil {
		return fmt.Errorf("start demo: %w", d.err)
	}
	return nil
}

// demoForwardStep is the simulated seconds between the log lines a fast-forward writes.
const demoForwardStep = 15.0

// Now is the demo's simulated clock: the start time plus Speed times the wall-clock time since.
func (d *Demo) Now() time.Time {
	return d.start.Add(time.Duration(float64(time.Since(d.start)) * d.speed))
}

func (d *Demo) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	down := d.job.serverDown()
	var body []byte
	if !down {
		body = d.job.Metrics()
	}
	d.mu.Unlock()
	if down {
		http.Error(w, "server restarting", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(body)
}

func (d *Demo) serveHealth(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	down := d.job.serverDown()
	d.mu.Unlock()
	if down {
		http.Error(w, "server restarting", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// run advances the job every tick and writes its log and output.
func (d *Demo) run(ctx context.Context, speed float64) {
	defer close(d.done)
	tick := time.NewTicker(demoTick)
	defer tick.Stop()
	for {
		d.mu.Lock()
		wasDone := d.job.Done()
		if !wasDone {
			d.job.Advance(demoTick.Seconds() * speed)
		}
		d.writeOutput()
		// The log is as fresh as the metrics (a lagging log skews tokens per item early); it ends
		// with the line of the tick the job finished on.
		if d.err == nil && !wasDone {
			if _, err := fmt.Fprintln(d.log, d.job.ProgressLine()); err != nil {
				d.err = fmt.Errorf("write %s: %w", d.LogPath, err)
			}
		}
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// writeOutput appends the items finished since the last call to the current part file, about
// demoBytesPerToken bytes per token. Called with d.mu held.
func (d *Demo) writeOutput() {
	lengths := d.job.takeFinished()
	if d.err != nil {
		return
	}
	for _, n := range lengths {
		if d.part == nil {
			if err := d.nextPart(); err != nil {
				d.err = err
				return
			}
		}
		fmt.Fprintf(d.partW, `{"id":%d,"completion_tokens":%d,"text":"%s"}`+"\n", d.items, n,
			demoText(n*demoBytesPerToken))
		d.items++
		if d.items%demoItemsPerFile == 0 {
			if err := d.closePart(); err != nil {
				d.err = err
				return
			}
		}
	}
	if d.partW != nil {
		if err := d.partW.Flush(); err != nil {
			d.err = fmt.Errorf("write output: %w", err)
		}
	}
}

func (d *Demo) nextPart() error {
	name := filepath.Join(d.OutputDir, fmt.Sprintf("part-%05d.jsonl", d.parts))
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("create output: %w", err)
	}
	d.part, d.partW = f, bufio.NewWriterSize(f, 256<<10)
	d.parts++
	return nil
}

func (d *Demo) closePart() error {
	if d.part == nil {
		return nil
	}
	err := d.partW.Flush()
	if cerr := d.part.Close(); err == nil {
		err = cerr
	}
	d.part, d.partW = nil, nil
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// demoText is n bytes of filler text (JSON-safe).
func demoText(n int) string {
	const filler = "the quick brown fox jumps over the lazy dog "
	return strings.Repeat(filler, n/len(filler)+1)[:n]
}

// Done reports whether every item of the demo job has finished.
func (d *Demo) Done() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.job.Done()
}

// Close stops the job and the server and closes the files. It returns the first error the demo met writing
// its log or output. Closing again returns the same.
func (d *Demo) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.close() })
	return d.closeErr
}

func (d *Demo) close() error {
	d.cancel()
	<-d.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if perr := d.closePart(); err == nil {
		err = perr
	}
	if lerr := d.log.Close(); err == nil {
		err = lerr
	}
	if d.err != nil {
		return d.err
	}
	return err
}
