package monitor

import (
	"sync"

	"runwatch/config"
	"runwatch/probes"
	"runwatch/reports"
)

// signalBook keeps, per run and server, the recent finish and drafter counters the signals are read
// from (reports.AssessQuality, reports.AssessDrafter). It lives in memory only: after a restart the
// shares start from the servers' own totals and a jump needs fresh samples to show.
type signalBook struct {
	mu   sync.Mutex
	runs map[string]reports.SignalSeries
}

// signalMaxSamples bounds each server's samples. The counters are cumulative, so dropping a sample
// only merges two steps into one: past the bound, every other sample of the older half goes (the
// first stays, it holds what the server did before runwatch looked), and old history thins out
// while the latest keeps full detail. A restart hidden inside a merged step whose counters have
// already climbed past their old values is counted short.
const signalMaxSamples = 64

// add records a sample's signals and returns a copy of the run's series to assess.
func (b *signalBook) add(run string, smp map[string]reports.SignalSample) reports.SignalSeries {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs == nil {
		b.runs = map[string]reports.SignalSeries{}
	}
	series := b.runs[run]
	if series == nil {
		series = reports.SignalSeries{}
		b.runs[run] = series
	}
	for key, s := range smp {
		old := series[key]
		if n := len(old); n > 0 && old[n-1].T >= s.T {
			continue
		}
		old = append(old, s)
		if len(old) > signalMaxSamples {
			half := len(old) / 2
			thin := append(make([]reports.SignalSample, 0, signalMaxSamples), old[0])
			for i := 2; i < half; i += 2 {
				thin = append(thin, old[i])
			}
			old = append(thin, old[half:]...)
		}
		series[key] = old
	}
	out := make(reports.SignalSeries, len(series))
	for k, v := range series {
		out[k] = append([]reports.SignalSample(nil), v...)
	}
	return out
}

// signalSamples takes the signals of the engines that answered.
func signalSamples(readings []probes.EngineReading, t float64) map[string]reports.SignalSample {
	out := map[string]reports.SignalSample{}
	for _, rd := range readings {
		if rd.Err == nil && rd.Engine.Kind != "" {
			out[rd.Key] = reports.SignalSampleOf(t, rd.Engine)
		}
	}
	return out
}

// assessSignals adds a sample's signals to the run's book and reads the finish shares and drafter.
func (m *Monitor) assessSignals(r *config.Run, smp *sample) (*reports.Quality, *reports.Drafter) {
	if smp == nil || len(smp.signals) == 0 {
		return nil, nil
	}
	series := m.signals.add(r.Name, smp.signals)
	return reports.AssessQuality(series, int64(r.MaxTokens), reports.QualityConfig{}), reports.AssessDrafter(series, reports.DrafterConfig{})
}
