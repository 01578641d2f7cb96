package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runwatch/internal/testkit/fake"
	"strings"
	"testing"
)

// TestPathTokensNeverShown: a run whose metrics URLs carry tokens in their paths (a gateway's
// /bot<id>:<token>/, a hosted Prometheus's /api/prom/<key>/, one answering and one failing with a
// 404 that names its route) and whose stage check posts to a webhook-like /services/T/B/<secret>.
// `bot ask`, `bot ask --json`, `bot status` and `bot status --json` name every URL with the token
// replaced by [redacted], and no token reaches their output or the log. One-shot commands only read the
// state directory, so none of them writes a state file to check here: what a sampling bot saves is
// monitor's TestStateFromBeforePathRedaction (a console could save one, but only if its background sample
// beats its exit).
func TestPathTokensNeverShown(t *testing.T) {
	const (
		botToken = "AAH4xk9Zq0LmNoPqRsTuVw12"
		promKey  = "3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b"
		hookKey  = "q8Zr2LmX0vB7nT4kW1yH6pDs"
	)
	secrets := []string{botToken, promKey, hookKey}
	engine := fake.NewReplay(t, fake.VLLMOptions{}) // a real engine's recorded /metrics
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, promKey) {
			http.Error(w, "no route "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Write(engine.Body(1))
	}))
	defer srv.Close()
	dir := setEnv(t)
	cfg := filepath.Join(dir, "runwatch.yaml")
	runFile := fmt.Sprintf(`runs:
  - name: tok
    channel: "#tok"
    metrics:
      - "%[1]s/bot123456:%[2]s/metrics"
      - "%[1]s/api/prom/%[3]s/metrics"
    stages:
      - {name: hook, check: http, url: "%[1]s/services/T0001/B0001/%[4]s"}
`, srv.URL, botToken, promKey, hookKey)
	if err := os.WriteFile(cfg, []byte(runFile), 0o644); err != nil {
		t.Fatal(err)
	}
	places := map[string]string{}
	for _, args := range [][]string{
		{"ask", "--config", cfg, "status"},
		{"ask", "--json", "--config", cfg, "status"},
		{"ask", "--config", cfg, "how fast are we going?"},
		{"status", "--config", cfg},
		{"status", "--json", "--config", cfg},
	} {
		code, out, errb := run(t, "", args...)
		if code != 0 {
			t.Fatalf("bot %s = %d\n%s\n%s", strings.Join(args, " "), code, out, errb)
		}
		places["bot "+strings.Join(args[:len(args)-2], " ")+" "+args[len(args)-1]] = out + errb
	}
	status := places["bot status "+cfg]
	for _, want := range []string{"/[redacted]/metrics", "/api/prom/[redacted]/metrics", "/services/T0001/B0001/[redacted]"} {
		if !strings.Contains(status, want) {
			t.Errorf("bot status does not name %q:\n%s", want, status)
		}
	}
	filepath.WalkDir(filepath.Join(dir, "state"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			places["state "+d.Name()] = string(b)
		}
		return nil
	})
	leaks := leaksIn(t, places, secrets)
	t.Logf("figure: 3 path tokens (metrics answering, metrics failing, stage check) in %d places: %d leaks", len(places), leaks)
}
