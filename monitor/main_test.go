package monitor

import (
	"flag"
	"os"
	"testing"

	"runwatch/internal/promtest"
)

// waitingTests is how many of the parallel tests run at once unless -test.parallel says otherwise: they
// wait on a real Prometheus's scrapes (a 6 s gap in its data, a scrape interval's age), not on the CPU.
const waitingTests = 6

func TestMain(m *testing.M) {
	flag.Parse()
	promtest.RaiseParallel(waitingTests)
	os.Exit(m.Run())
}
