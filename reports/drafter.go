package reports

import (
	"fmt"
	"math"
	"strings"
)

// Drafter is how well speculative decoding does: the share of draft tokens the target model
// accepted, and how many tokens each verification step yields (1 + accepted/drafts: every step
// emits the target's own token after the accepted ones).
type Drafter struct {
	AcceptRate    float64   `json:"accept_rate"`               // accepted / draft tokens
	TokensPerStep float64   `json:"tokens_per_step,omitempty"` // 0 when the engine does not count drafts
	PerPos        []float64 `json:"per_position,omitempty"`    // acceptance at each draft position
	DraftTokens   float64   `json:"draft_tokens"`              // draft tokens in the window
	// Gauge says the numbers are the engine's own running averages (SGLang), not counted here.
	Gauge bool `json:"gauge,omitempty"`
	// Drop is set when the acceptance over the latest draft tokens is well below what it was.
	Drop *AcceptDrop `json:"drop,omitempty"`
}

// AcceptDrop is a fall in acceptance: from Before (over BeforeN draft tokens) to Now (the latest NowN).
type AcceptDrop struct {
	Before  float64 `json:"before"`
	Now     float64 `json:"now"`
	BeforeN float64 `json:"before_n"`
	NowN    float64 `json:"now_n"`
}

// DrafterConfig sets when acceptance counts as dropped. Zero values take the defaults.
type DrafterConfig struct {
	// MinWindow is how many draft tokens the latest window and the earlier one each need (default 500).
	MinWindow float64
	// MinFall is the fall in acceptance that matters (default 0.10, ten points).
	MinFall float64
	// MinZ is the z the fall must reach (default 6: draft tokens of one step are not independent,
	// so the binomial z overstates the evidence).
	MinZ float64
}

func (c DrafterConfig) withDefaults() DrafterConfig {
	if c.MinWindow <= 0 {
		c.MinWindow = 500
	}
	if c.MinFall <= 0 {
		c.MinFall = 0.10
	}
	if c.MinZ <= 0 {
		c.MinZ = 6
	}
	return c
}

// AssessDrafter reads the speculative-decoding counters of every server; nil when no server drafts.
func AssessDrafter(s SignalSeries, cfg DrafterConfig) *Drafter {
	cfg = cfg.withDefaults()
	var steps []signalStep
	for _, st := range s.steps() {
		if st.drafter {
			steps = append(steps, st)
		}
	}
	if len(steps) == 0 {
		return drafterFromGauges(s)
	}
	d := &Drafter{}
	var drafts, accepted float64
	var perPos []float64
	for _, st := range steps {
		drafts += st.drafts
		d.DraftTokens += st.draftTokens
		accepted += st.accepted
		for i, v := range st.perPos {
			for len(perPos) <= i {
				perPos = append(perPos, 0)
			}
			perPos[i] += v
		}
	}
	if d.DraftTokens <= 0 {
		return nil
	}
	d.AcceptRate = accepted / d.DraftTokens
	if drafts > 0 {
		d.TokensPerStep = 1 + accepted/drafts
		for _, v := range perPos {
			d.PerPos = append(d.PerPos, v/drafts)
		}
	}
	start := signalSplit(len(steps), func(i int) float64 { return steps[i].draftTokens }, cfg.MinWindow)
	if start <= 0 {
		return d
	}
	var k0, n0, k1, n1 float64
	for i, st := range steps {
		if i < start {
			k0, n0 = k0+st.accepted, n0+st.draftTokens
		} else {
			k1, n1 = k1+st.accepted, n1+st.draftTokens
		}
	}
	if n0 < cfg.MinWindow {
		return d
	}
	before, now := k0/n0, k1/n1
	if before-now >= cfg.MinFall && -signalZ(k0, n0, k1, n1) >= cfg.MinZ {
		d.Drop = &AcceptDrop{Before: before, Now: now, BeforeN: n0, NowN: n1}
	}
	return d
}

// drafterFromGauges reads the latest acceptance gauges (SGLang), averaged over servers.
func drafterFromGauges(s SignalSeries) *Drafter {
	var rate, length float64
	var nRate, nLength int
	for _, samples := range s {
		if len(samples) == 0 {
			continue
		}
		last := samples[len(samples)-1]
		if !math.IsNaN(last.AcceptRate) {
			rate += last.AcceptRate
			nRate++
		}
		if !math.IsNaN(last.AcceptLength) {
			length += last.AcceptLength
			nLength++
		}
	}
	if nRate == 0 && nLength == 0 {
		return nil
	}
	d := &Drafter{Gauge: true, AcceptRate: math.NaN()}
	if nRate > 0 {
		d.AcceptRate = rate / float64(nRate)
	}
	if nLength > 0 {
		d.TokensPerStep = length / float64(nLength)
	}
	return d
}

// DrafterLine renders the drafter: "drafter: 62% of draft tokens accepted, 2.86 tokens per step".
func DrafterLine(d Drafter) string {
	var parts []string
	if !math.IsNaN(d.AcceptRate) {
		parts = append(parts, Percent(d.AcceptRate)+" of draft tokens accepted")
	}
	if d.TokensPerStep > 0 {
		parts = append(parts, fmt.Sprintf("%.2f tokens per step", d.TokensPerStep))
	}
	s := ":zap: Drafter: " + strings.Join(parts, ", ")
	if len(d.PerPos) > 1 {
		var pos []string
		for _, v := range d.PerPos {
			pos = append(pos, Percent(v))
		}
		s += " (by draft position: " + strings.Join(pos, " ") + ")"
	}
	if d.Gauge {
		s += " _(the engine's running average)_"
	} else {
		s += fmt.Sprintf(" over %s draft tokens", Tokens(d.DraftTokens))
	}
	if d.Drop != nil {
		s += "\n" + DropLine(*d.Drop)
	}
	return s
}

// DropLine renders a fall in acceptance.
func DropLine(p AcceptDrop) string {
	return fmt.Sprintf(":warning: drafter acceptance fell from %s of the %s draft tokens before to *%s* of the latest %s",
		Percent(p.Before), Tokens(p.BeforeN), Percent(p.Now), Tokens(p.NowN))
}
