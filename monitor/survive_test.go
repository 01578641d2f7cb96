package monitor

import (
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestSurviveNamesThePanickedProbe: a probe that panics in its goroutine adds a problem named for it and
// lets the run's status go on; the panic stopped the bot before.
func TestSurviveNamesThePanickedProbe(t *testing.T) {
	var mu sync.Mutex
	var got []string
	add := func(probe string, err error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, probe+": "+err.Error())
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		defer survive("progress", add)
		panic("a log line nobody foresaw")
	}()
	go func() {
		defer wg.Done()
		defer survive("storage", add)
	}()
	go func() {
		defer wg.Done()
		defer survive("metrics", add)
		panic("no series in http://admin:hunter2@vllm:8000/metrics?api_key=K3Y")
	}()
	wg.Wait()
	sort.Strings(got)
	if len(got) != 2 || !strings.Contains(got[1], "progress: failed with a panic: a log line nobody foresaw") {
		t.Errorf("problems = %q; want the two panicked probes, named", got)
	}
	// A panic's text is what the probe was handling: a URL in it is redacted before it is a problem.
	if len(got) == 2 && (strings.Contains(got[0], "hunter2") || strings.Contains(got[0], "K3Y") ||
		!strings.Contains(got[0], "metrics: failed with a panic: no series in http://vllm:8000/metrics?api_key=[redacted]")) {
		t.Errorf("problem of a panic on a URL = %q; want the URL redacted", got[0])
	}
}
