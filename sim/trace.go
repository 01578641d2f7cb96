package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"runwatch/reports"
	"runwatch/reports/estimate"
)

// Trace runs a scenario to its end and samples it every `every` sim seconds, from second 0 to the first sample
// after the last item finished. trueFinish is the sim time the last item finished.
func Trace(s Scenario, seed int64, every float64) (obs []reports.Observation, trueFinish float64) {
	j := NewJob(s, seed)
	obs = append(obs, j.Observation())
	for !j.Done() {
		j.Advance(every)
		obs = append(obs, j.Observation())
	}
	// A sampler folds the engines' counters as it records them: totals that only grow, restarts counted.
	return estimate.Fold(obs), j.FinishedAt()
}

// WriteTrace writes observations as JSON lines, the format `bot replay --trace` reads.
func WriteTrace(w io.Writer, obs []reports.Observation) error {
	bw := bufio.NewWriter(w)
	for _, o := range obs {
		line, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("encode observation at t=%g: %w", o.T, err)
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// ReadTrace reads a trace written by WriteTrace, or recorded with the engines' own counters: one observation
// per line, blank lines skipped, the counters folded (estimate.Fold). An error names the line.
func ReadTrace(r io.Reader) ([]reports.Observation, error) {
	var obs []reports.Observation
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		o, err := reports.ParseObservation(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		obs = append(obs, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	// A trace recorded with the servers' own counters (they start again at a restart) is folded here, once,
	// into the totals every history holds; one written folded comes back as it is.
	return estimate.Fold(obs), nil
}
