package estimate

import (
	"math"
	"testing"
)

func TestProject(t *testing.T) {
	seed := Observation{Done: 300, Total: 25000, GenTokens: fp(565405), Running: fp(200), AvgCompletion: fp(1066)}
	p, ok := Project(seed, 15000, 0)
	if !ok {
		t.Fatal("Project(seed) = no projection")
	}
	// 30 prompt tokens per started item plus the censored mean, 1,131-1,622 completion tokens.
	if math.Abs(p.PerItemLow-(30+565405.0/500)) > 1e-6 || math.Abs(p.Low-25000*p.PerItemLow) > 1e-3 || p.High < p.Point || p.Point < p.Low {
		t.Errorf("Project(seed) = %+v; want 25,000 × (30 + 1,131) at the low end and low <= point <= high", p)
	}
	if p.Low < 27e6 || p.High > 42e6 {
		t.Errorf("Project(seed) = %.1fM-%.1fM tokens; want within 27M-42M", p.Low/1e6, p.High/1e6)
	}
	// The estimator's own tokens per item, from a longer history, prices the 24,500 items not started yet; the
	// 500 started stay at the censored mean.
	if q, _ := Project(seed, 15000, 1400); math.Abs(q.PerItem-(30+(500*p.PerItem-500*30+24500*1400)/25000)) > 1e-6 {
		t.Errorf("Project(seed, 1,400 tokens per item) point = %v per item; want 30 + (500 started at %.0f + 24,500 at 1,400) / 25,000",
			q.PerItem, p.PerItem-30)
	}
	// Lengths that drifted past the run's censored mean so far (the demo's 1,051 against 785-807): the point and
	// the high end follow them, the low end keeps the censored one.
	if q, _ := Project(seed, 15000, 2500); q.PerItem < 30+0.97*2500 || q.PerItemHigh < q.PerItem || q.PerItemLow != p.PerItemLow {
		t.Errorf("Project(seed, 2,500 tokens per item) = %+v; want the point and high near 2,530, the low end %v as before", q, p.PerItemLow)
	}
	// No completion is longer than max_tokens.
	capped := seed
	capped.MaxTokens = 4096
	if q, _ := Project(capped, 15000, 9000); q.PerItemHigh > 30+4096 {
		t.Errorf("Project(max_tokens 4,096, 9,000 tokens per item) = %v per item at most; want at most 4,126", q.PerItemHigh)
	}
	done := seed
	done.Done = 25000
	if q, _ := Project(done, 15000, 0); !q.Measured || q.Point != 565405+15000 {
		t.Errorf("Project(done) = %+v; want the measured count", q)
	}
	early := seed
	early.Done = 100
	if _, ok := Project(early, 15000, 0); ok {
		t.Errorf("Project(0.4%% done) gave a figure; want none before 1%%")
	}
}
