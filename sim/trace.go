package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"runwatch/reports"
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
	return obs, j.FinishedAt()
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

// ReadTrace reads a trace written by WriteTrace: one observation per line, blank lines skipped. An error names
// the line.
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
	return obs, nil
}
