package monitor

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit/fake"
	"runwatch/reports"
)

// TestPrometheusOnlyRunShowsThroughput: a run read only from a Prometheus server, without `total:`, has no ETA
// (nothing says how many items there are) but its throughput is measured from the counters Prometheus holds,
// and the status says so.
func TestPrometheusOnlyRunShowsThroughput(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	job := promFakeJob{instances: 3, start: float64(now.Unix()) - 3600, rate: 1000, items: 2, fill: 10e6, dataAvail: 60e9, down: -1}
	fp := newPromFake(t, map[string]promFakeJob{"synth": job})
	run := promTestRun("synth", fp.URL, 0)
	clock := fake.NewClock(now)
	m, _, err := New(&config.File{Runs: []config.Run{run}}, Options{ProbeTimeout: 2 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	rs := m.Status(context.Background(), All).Runs[0]
	want := 3 * job.rate
	if rs.Throughput == nil || math.Abs(rs.Throughput.TokensPerS-want)/want > 0.01 {
		t.Fatalf("throughput of a Prometheus-only run without a total = %+v; want %g tok/s", rs.Throughput, want)
	}
	text := reports.RenderStatus(rs, now, time.UTC).Text()
	if !strings.Contains(text, "3,000 tok/s") || strings.Contains(text, "No progress source") {
		t.Errorf("status of a Prometheus-only run =\n%s\nwant 3,000 tok/s", text)
	}
}
