package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runwatch/internal/testkit"
	"strings"
	"testing"
	"time"
)

// labelBomb is 3 series of 5,000 labels each under vLLM's names (about 147 KB): the red team's
// finding 4, which held every answer for 57–87 s.
func labelBomb() string {
	var b strings.Builder
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:generation_tokens_total"} {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{", name, name)
		for i := range 5000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "l%d=\"v\"", i)
		}
		b.WriteString("} 1\n")
	}
	return b.String()
}

// TestHTTPLabelBombAnsweredWithinProbeTimeout sends a signed /eta while the run's metrics endpoint
// serves a label bomb. The scrape is refused before the parser sees it, the answer names the
// problem, and it comes inline (within the inline budget, so well within the probe timeout).
func TestHTTPLabelBombAnsweredWithinProbeTimeout(t *testing.T) {
	bomb := labelBomb()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(bomb))
	}))
	defer srv.Close()
	e := newHTTPEnv(t, botOpts{Metrics: []string{srv.URL + "/metrics"}, Timeout: 2 * time.Second})
	goroutines := runtime.NumGoroutine()
	var took []time.Duration
	for i := range 3 {
		start := time.Now()
		resp := e.post(t, "/slack/commands", testkit.SlashBody("/eta", "", "C0SYNTH", "U222", e.fake.ResponseURL(fmt.Sprint("eta", i))), nil)
		took = append(took, time.Since(start))
		var msg struct {
			Text string `json:"text"`
		}
		body := readAll(t, resp.Body)
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			t.Fatalf("/eta = %d %q: %v", resp.StatusCode, body, err)
		}
		if !strings.Contains(msg.Text, "has 5000 labels (limit 128)") {
			t.Fatalf("/eta with a label bomb = %q; want it inline, naming the series refused", msg.Text)
		}
	}
	e.app.wait(10 * time.Second)
	t.Logf("figure: label bomb (3 series × 5,000 labels, %d KB): /eta answered inline in %v, %v, %v (probe timeout 2s), naming the refused series; goroutines %d -> %d",
		len(bomb)/1000, took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), took[2].Round(time.Millisecond), goroutines, runtime.NumGoroutine())
}
