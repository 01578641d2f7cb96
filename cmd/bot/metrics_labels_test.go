package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"runwatch/config"
	"runwatch/exporter"
	"runwatch/internal/botmetrics"
	"runwatch/monitor"
)

// addressLike matches a label value that names a URL or a network address: a scheme, an IPv4
// address, or host:port.
var addressLike = regexp.MustCompile(`://|\b\d{1,3}(\.\d{1,3}){3}\b|[A-Za-z0-9_.-]+:\d{2,5}\b`)

// runwatchLabels scrapes h and lists every label value of every runwatch_ series, by family and label.
func runwatchLabels(t *testing.T, h http.Handler) map[string]map[string][]string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]map[string][]string{}
	for name, fam := range fams {
		if !strings.HasPrefix(name, "runwatch_") {
			continue
		}
		out[name] = map[string][]string{}
		for _, m := range fam.GetMetric() {
			for _, lp := range m.GetLabel() {
				vs := out[name][lp.GetName()]
				if !strings.Contains(strings.Join(vs, "\x00")+"\x00", lp.GetValue()+"\x00") {
					out[name][lp.GetName()] = append(vs, lp.GetValue())
				}
			}
		}
	}
	return out
}

// No label of runwatch's own metrics, the bot's or the exporter's, holds a URL or an address: a
// probe's name does (a metrics endpoint, a Prometheus target), and as a label it made runs ×
// targets series for as long as the bot ran. The test fails probes of every kind that names one,
// through a real sample, and lists every label it finds.
func TestNoMetricLabelHoldsAnAddress(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(shared, 0o755)
	writeTo(t, filepath.Join(shared, "part-00001.bin")) // a protected writer: the exporter's path, mount and command labels
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there any more
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A Prometheus whose engine targets are down: each named by its address.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`+
			`{"metric":{"__name__":"up","instance":"10.0.0.7:8000","job":"vllm"},"value":[1800000000,"0"]},`+
			`{"metric":{"__name__":"up","instance":"gpu-node-3.internal:8000","job":"vllm"},"value":[1800000000,"0"]}]}}`)
	}))
	defer prom.Close()
	f := &config.File{Source: "test", Runs: []config.Run{
		{Name: "synth", Metrics: []string{strings.Replace(deadURL, "http://", "http://user:secret@", 1) + "/metrics"}, Log: filepath.Join(dir, "missing.log"),
			Outputs: []string{filepath.Join(dir, "out")}, Protected: []string{shared}},
		{Name: "remote", Total: 100, Protected: []string{shared}, Prometheus: &config.Prometheus{URL: prom.URL, Selector: `{job="vllm"}`}},
	}}
	m, _, err := monitor.New(f, monitor.Options{ProbeTimeout: 2 * time.Second, RateWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	evs := m.Sample(context.Background())
	var names []string
	for _, ev := range evs {
		for _, p := range ev.Run.Problems {
			names = append(names, p.Probe)
		}
	}
	if !addressLike.MatchString(strings.Join(names, " ")) {
		t.Fatalf("the sample's problems %q name no URL or address; the test needs some", names)
	}
	bot := botmetrics.New()
	bot.ObserveEvaluations(evs)
	bot.Posted("protected_write", nil)
	bot.SlackRetry("chat.postMessage", "rate_limited")
	bot.Reject("bad_signature")
	bot.Event("answered")
	bot.Answered("mention", 20*time.Millisecond)

	node, err := exporter.NodeMonitor(f, "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for what, h := range map[string]http.Handler{"bot": bot.Handler(), "exporter": exporter.New(node, exporter.Options{}).Handler()} {
		labels := runwatchLabels(t, h)
		if len(labels) == 0 {
			t.Errorf("%s: no runwatch_ series", what)
		}
		var list []string
		for fam, ls := range labels {
			for label, values := range ls {
				list = append(list, fmt.Sprintf("%s{%s}=%q", fam, label, values))
				for _, v := range values {
					if addressLike.MatchString(v) {
						t.Errorf("%s: %s has label %s=%q, a URL or an address", what, fam, label, v)
					}
				}
			}
		}
		sort.Strings(list)
		t.Logf("figure: %s labels: %s", what, strings.Join(list, "; "))
	}
}
