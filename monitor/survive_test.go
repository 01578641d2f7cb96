package monitor

import (
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
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer survive("progress", add)
		panic("a log line nobody foresaw")
	}()
	go func() {
		defer wg.Done()
		defer survive("storage", add)
	}()
	wg.Wait()
	if len(got) != 1 || !strings.Contains(got[0], "progress: failed with a panic: a log line nobody foresaw") {
		t.Errorf("problems = %q; want the one panicked probe, named", got)
	}
}
