package checklist

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

// One run with a stage of every kind, checked against a real HTTP server and real files.
func TestCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "part-0"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &config.Run{Name: "synth", Stages: []config.Stage{
		{Name: "server", Check: "http", URL: srv.URL + "/health"},
		{Name: "drafter", Check: "exists", Path: filepath.Join(dir, "drafter.pt")},
		{Name: "generate", Check: "progress"},
		{Name: "output", Check: "growing", Path: out},
		{Name: "drained", Check: "metric", Metric: "vllm:num_requests_running", Op: "==", Value: 0},
		{Name: "review", Check: "manual"},
		{Name: "signed off", Check: "manual"},
		{Name: "alerts", Check: "promql", Query: "up"},
	}}
	c := &Checker{HTTP: srv.Client(), Guard: probes.NewGuard()}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	in := Input{
		Now:      t0,
		Progress: &reports.Progress{Done: 300, Total: 25000},
		Metrics:  map[string]float64{"running": 0},
		Marks:    map[string]Mark{"signed off": {State: reports.StageDone, By: "UADMIN", At: t0}},
	}
	got, looks := c.Check(context.Background(), r, in, time.Minute)
	want := []struct{ state, detail string }{
		{reports.StageDone, ""},
		{reports.StagePending, filepath.Join(dir, "drafter.pt") + " does not exist yet"},
		{reports.StageInProgress, "300 / 25,000 (1%)"},
		{reports.StageInProgress, "100 B in 1 file"},
		{reports.StageDone, "vllm:num_requests_running = 0 == 0"},
		{reports.StagePending, "set it with /runwatch stage review done"},
		{reports.StageDone, "marked done by UADMIN at Sun 29 Nov 12:00 UTC"},
		{reports.StagePending, "promql checks need prometheus: in the run"},
	}
	for i, w := range want {
		if got[i].Name != r.Stages[i].Name || got[i].State != w.state || (w.detail != "" && got[i].Detail != w.detail) {
			t.Errorf("stage %s = %+v; want %s %q", r.Stages[i].Name, got[i], w.state, w.detail)
		}
	}
	// The directory does not change for ten minutes: the growing stage is done.
	in.Growing, in.Now = looks, t0.Add(11*time.Minute)
	got, _ = c.Check(context.Background(), r, in, time.Minute)
	if g := got[3]; g.State != reports.StageDone {
		t.Errorf("growing stage unchanged for 11 minutes = %+v; want done", g)
	}
	// The bot's clock in another zone: a mark's time is said in it, as the rest of the answer is.
	in.Now = t0.In(time.FixedZone("PST", -8*3600))
	got, _ = c.Check(context.Background(), r, in, time.Minute)
	if g := got[6]; g.Detail != "marked done by UADMIN at Sun 29 Nov 04:00 PST" {
		t.Errorf("a mark with the bot in PST = %q; want its time in PST", g.Detail)
	}
}

// TestCheckUnchecked: a check that cannot run is pending and says it could not be checked (Unchecked), so
// the answers do not call it "waits on" another stage; a query that answers not-yet is pending alone.
func TestCheckUnchecked(t *testing.T) {
	r := &config.Run{Name: "synth", Stages: []config.Stage{
		{Name: "bad-query", Check: "promql", Query: "sum(("},
		{Name: "eight-up", Check: "promql", Query: "count(up) >= 8"},
	}}
	c := &Checker{Guard: probes.NewGuard(), PromQL: func(_ context.Context, _ *config.Run, q string) (bool, string, error) {
		if q == "sum((" {
			return false, "", errors.New("bad_data: parse error: unclosed left parenthesis")
		}
		return false, "the query returns nothing yet", nil
	}}
	got, _ := c.Check(context.Background(), r, Input{Now: time.Unix(1_800_000_000, 0)}, time.Minute)
	if g := got[0]; g.State != reports.StagePending || !g.Unchecked || !strings.Contains(g.Detail, "query failed: bad_data") {
		t.Errorf("a failing query = %+v; want pending, unchecked, naming the error", g)
	}
	if g := got[1]; g.State != reports.StagePending || g.Unchecked {
		t.Errorf("a query not met yet = %+v; want pending and checked", g)
	}
}

// TestMarkBesideItsCheck: a mark wins (a person decided), but a stage with an automatic check is still
// checked, and the detail says when the check disagrees: `stage generate done` at 1% read "marked done
// by console" alone, and `stage server failed` with the server answering 200 read "[FAIL]" alone.
func TestMarkBesideItsCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	dir := t.TempDir()
	r := &config.Run{Name: "synth", Stages: []config.Stage{
		{Name: "server", Check: "http", URL: srv.URL + "/health"},
		{Name: "generate", Check: "progress"},
		{Name: "up", Check: "http", URL: srv.URL + "/health"},
		{Name: "review", Check: "manual"},
		{Name: "unreadable", Check: "promql", Query: "up"},
		{Name: "drafter", Check: "exists", Path: filepath.Join(dir, "drafter.pt")},
	}}
	c := &Checker{HTTP: srv.Client(), Guard: probes.NewGuard(), PromQL: func(context.Context, *config.Run, string) (bool, string, error) {
		return false, "", errors.New("connection refused")
	}}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	mark := func(state string) Mark { return Mark{State: state, By: "console", At: t0} }
	in := Input{Now: t0, Progress: &reports.Progress{Done: 1296, Total: 25000}, Marks: map[string]Mark{
		"server": mark(reports.StageFailed), "generate": mark(reports.StageDone), "up": mark(reports.StageDone),
		"review": mark(reports.StageDone), "unreadable": mark(reports.StageDone), "drafter": mark(reports.StageFailed),
	}}
	got, _ := c.Check(context.Background(), r, in, time.Minute)
	at := "at Sun 29 Nov 12:00 UTC"
	want := []struct{ state, detail string }{
		{reports.StageFailed, "marked failed by console " + at + "; its check says: " + srv.URL + "/health answers 200 in "},
		{reports.StageDone, "marked done by console " + at + "; its check says: 1,296 / 25,000 (5%)"},
		{reports.StageDone, "marked done by console " + at}, // the check agrees
		{reports.StageDone, "marked done by console " + at}, // no check but the person
		{reports.StageDone, "marked done by console " + at}, // a check that cannot run has no verdict
		{reports.StageFailed, "marked failed by console " + at + "; its check says: " + filepath.Join(dir, "drafter.pt") + " does not exist yet"},
	}
	for i, w := range want {
		g := got[i]
		exact := !strings.HasSuffix(w.detail, " in ")
		if g.Name != r.Stages[i].Name || g.State != w.state || !g.Manual || (exact && g.Detail != w.detail) || !strings.HasPrefix(g.Detail, w.detail) {
			t.Errorf("stage %s = %+v; want %s, manual, %q", r.Stages[i].Name, g, w.state, w.detail)
		}
	}
}

// TestHTTPCheckAnsweringIsNotDown: an http stage whose server answers, with an error status or a
// redirect elsewhere, failed; only one that does not answer is "not answering yet". A redirect to a
// login page read "not answering yet: …", as if the server were not up.
func TestHTTPCheckAnsweringIsNotDown(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	mux.Handle("/login", http.RedirectHandler("http://login.example.invalid/", http.StatusFound))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	gone := httptest.NewServer(mux)
	gone.Close()
	r := &config.Run{Name: "synth", Stages: []config.Stage{
		{Name: "error", Check: "http", URL: srv.URL + "/error"},
		{Name: "login", Check: "http", URL: srv.URL + "/login"},
		{Name: "gone", Check: "http", URL: gone.URL + "/health"},
	}}
	c := &Checker{HTTP: srv.Client(), Guard: probes.NewGuard()}
	got, _ := c.Check(context.Background(), r, Input{Now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}, time.Minute)
	want := []struct{ state, detail string }{
		{reports.StageFailed, srv.URL + "/error answers 500 Internal Server Error"},
		{reports.StageFailed, "redirect to another host refused: " + srv.URL + "/login redirected to http://login.example.invalid/"},
		{reports.StagePending, "not answering yet: "},
	}
	for i, w := range want {
		if g := got[i]; g.State != w.state || !strings.HasPrefix(g.Detail, w.detail) {
			t.Errorf("stage %s = %+v; want %s, %q", r.Stages[i].Name, g, w.state, w.detail)
		}
	}
}

// Once every item is done the job's inference server is stopped to free its GPUs: its http stage is done and
// says so, not "not answering yet" (a server nobody will start again). An http stage on another host (a
// service for a later step) is still waited for.
func TestHTTPCheckAfterTheFinish(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	later := httptest.NewServer(http.NotFoundHandler())
	later.Close()
	r := &config.Run{Name: "synth", Metrics: []string{gone.URL + "/metrics"}, Stages: []config.Stage{
		{Name: "vllm-server", Check: "http", URL: gone.URL + "/health"},
		{Name: "eval-server", Check: "http", URL: strings.Replace(later.URL, "127.0.0.1", "localhost", 1) + "/health"},
	}}
	c := &Checker{HTTP: http.DefaultClient, Guard: probes.NewGuard()}
	now := time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		in   Input
		want string // the server stage's
	}{
		{"running", Input{Now: now, Progress: &reports.Progress{Done: 24000, Total: 25000}}, "not answering yet: "},
		{"finished at 14:02", Input{Now: now, Progress: &reports.Progress{Done: 25000, Total: 25000}, Finished: true,
			FinishedAt: time.Date(2026, 12, 6, 14, 2, 0, 0, time.UTC)}, "no longer answers (the job finished at 14:02 UTC)"},
		{"first seen finished", Input{Now: now, Progress: &reports.Progress{Done: 25000, Total: 25000}, Finished: true},
			"no longer answers (the job has finished)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := c.Check(context.Background(), r, tt.in, time.Minute)
			wantState := reports.StagePending
			if tt.in.Finished {
				wantState = reports.StageDone
			}
			if g := got[0]; g.State != wantState || !strings.HasPrefix(g.Detail, tt.want) || (tt.in.Finished && strings.Contains(g.Detail, "yet")) {
				t.Errorf("vllm-server = %+v; want %s, %q", g, wantState, tt.want)
			}
			if g := got[1]; g.State != reports.StagePending || !strings.HasPrefix(g.Detail, "not answering yet: ") {
				t.Errorf("eval-server, on another host = %+v; want pending, not answering yet", g)
			}
		})
	}
}
