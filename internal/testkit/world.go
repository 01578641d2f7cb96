package testkit

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/monitor"
	"runwatch/probes"
	"runwatch/state"
)

// Clock is the kit's one clock (fake.Clock), for the monitor, the scheduler and the limiters.
type Clock = fake.Clock

// NewClock is a clock at t.
func NewClock(t time.Time) *Clock { return fake.NewClock(t) }

// LogBuffer is a slog logger writing into a buffer, for checks on what was logged.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Logger logs into the buffer, debug lines included.
func (l *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Options shape a World; the zero value is a run with a progress log, an output directory and a
// state directory, on the wall clock.
type Options struct {
	Metrics   []string
	Run       func(r *config.Run)
	File      func(f *config.File)
	Env       config.Env     // for the bot built over the world (admins, allow-lists); UADMIN is an admin by default
	Loc       *time.Location // the bot's time zone; nil: UTC
	Clock     *Clock
	StateDir  string
	Timeout   time.Duration
	LogName   string
	NoLogFile bool
	StatFS    *probes.StatFS // nil: the real statfs
	ReadOnly  string         // the monitor only reads its state directory, for this reason
	ProcRoot  string         // "": ProcView of the test's own process; "/proc" the machine's
}

// World is one run, "synth", with real probes: a progress log, optionally a metrics endpoint, an
// output directory, a state directory, and the monitor over them.
type World struct {
	Mon      *monitor.Monitor
	File     *config.File
	Dir      string
	Log      string
	StateDir string
	Clock    *Clock // nil: wall clock
	// Env is the options' Env, with UADMIN an admin when it names none; Loc their time zone (UTC by default).
	Env config.Env
	Loc *time.Location
}

// NewWorld builds the world in a directory of the test's.
func NewWorld(t testing.TB, o Options) *World {
	t.Helper()
	dir := t.TempDir()
	name := o.LogName
	if name == "" {
		name = "gen.log"
	}
	w := &World{Dir: dir, Log: filepath.Join(dir, name), StateDir: o.StateDir, Clock: o.Clock, Env: o.Env, Loc: o.Loc}
	if w.Loc == nil {
		w.Loc = time.UTC
	}
	if w.StateDir == "" {
		w.StateDir = filepath.Join(dir, "state")
	}
	if !o.NoLogFile {
		w.WriteLog(t, 300, 25000)
	}
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	r := config.Run{Name: "synth", Channel: "#synth", Log: w.Log, Metrics: o.Metrics, Outputs: []string{filepath.Join(dir, "out")},
		Stages: []config.Stage{{Name: "generate", Check: "progress"}, {Name: "review", Check: "manual"}}}
	if o.Run != nil {
		o.Run(&r)
	}
	w.File = &config.File{Source: "test", Runs: []config.Run{r}}
	if o.File != nil {
		o.File(w.File)
	}
	if o.ProcRoot == "" {
		o.ProcRoot = ProcView(t, os.Getpid())
	}
	st, err := state.Open(w.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	mo := monitor.Options{ProbeTimeout: 2 * time.Second, State: st, RateWindow: -1, StatFS: o.StatFS,
		ReadOnly: o.ReadOnly != "", ReadOnlyWhy: o.ReadOnly, ProcRoot: o.ProcRoot}
	if o.Timeout > 0 {
		mo.ProbeTimeout = o.Timeout
	}
	if o.Clock != nil {
		mo.Now = o.Clock.Now
	}
	m, problems, err := monitor.New(w.File, mo)
	if err != nil || len(problems) > 0 {
		t.Fatalf("monitor.New = %v, %v", problems, err)
	}
	w.Mon = m
	if w.Env.Admins == nil {
		w.Env.Admins = []string{"UADMIN"}
	}
	return w
}

// WriteLog writes a progress line, done of total, as the job's log.
func (w *World) WriteLog(t testing.TB, done, total int) {
	t.Helper()
	line := fmt.Sprintf("starting\nProgress: %d/%d (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n", done, total)
	if err := os.WriteFile(w.Log, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteLogText writes text as the job's whole log.
func (w *World) WriteLogText(t testing.TB, text string) {
	t.Helper()
	if err := os.WriteFile(w.Log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
