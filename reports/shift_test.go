package reports_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"runwatch/reports"
)

// shiftRun is a run of 25,000 items at 1,400 tok/s evaluated every minute; tpi gives tokens per item at T t
// (and so how fast items go), noise multiplies each estimate.
type shiftRun struct {
	tpi   func(t float64) float64
	tps   func(t float64) float64
	noise func() float64
	state func(t float64) string
	reset *float64
}

type shiftEvent struct {
	t  float64
	sh reports.Shift
}

// run feeds the detector from T from to T to and returns the warnings.
func (r shiftRun) run(d *reports.ShiftDetector, from, to float64) []shiftEvent {
	left := 25000.0
	return r.feed(d, from, to, &left)
}

// feed is run with the items left carried from a previous call.
func (r shiftRun) feed(d *reports.ShiftDetector, from, to float64, itemsLeft *float64) []shiftEvent {
	var out []shiftEvent
	left := *itemsLeft
	defer func() { *itemsLeft = left }()
	for t := from; t <= to && left > 0; t += 60 {
		tpi, tps := r.tpi(t), 1400.0
		if r.tps != nil {
			tps = r.tps(t)
		}
		left -= 60 * tps / tpi
		sec := left * tpi / tps
		if r.noise != nil {
			sec *= r.noise()
		}
		low, high := sec*0.95, sec*1.05
		e := reports.ETA{State: reports.StateRunning, Seconds: &sec, LowS: &low, HighS: &high, ItemsLeft: left,
			TokensPerItem: tpi, TokensPerS: tps, ItemsPerS: tps / tpi, ResetAt: r.reset}
		if r.state != nil && r.state(t) != reports.StateRunning {
			e = reports.ETA{State: r.state(t)}
		}
		if sh, ok := d.Update(e, t, reports.ShiftConfig{}); ok {
			out = append(out, shiftEvent{t, sh})
		}
	}
	return out
}

func constant(v float64) func(float64) float64 { return func(float64) float64 { return v } }

func step(at, before, after float64) func(float64) float64 {
	return func(t float64) float64 {
		if t < at {
			return before
		}
		return after
	}
}

func TestShiftOnDrift(t *testing.T) {
	var d reports.ShiftDetector
	got := shiftRun{tpi: step(3600, 650, 1066)}.run(&d, 0, 30000)
	if len(got) != 1 {
		t.Fatalf("step 650 -> 1,066 tokens per item: %d warnings %+v; want 1", len(got), got)
	}
	sh := got[0].sh
	if !strings.Contains(sh.Reason, "completions grew 650 → 1,066 tokens (+64%): +") || !strings.HasPrefix(sh.Reason, "finish moved +") {
		t.Errorf("Reason = %q; want the finish moved later, from completions that grew 650 → 1,066 tokens", sh.Reason)
	}
	if sh.TokensPerItemShare < 0.9 || math.Abs(sh.ThroughputShare) > 0.01 || sh.ToFinish <= sh.FromFinish {
		t.Errorf("shares: tokens per item %.2f, throughput %.2f; want about 1 and 0, finish later", sh.TokensPerItemShare,
			sh.ThroughputShare)
	}
	if got[0].t < 3600 || got[0].t > 3600+5*60 {
		t.Errorf("warning at t=%v; want within minutes of the change at 3600", got[0].t)
	}
}

func TestShiftThroughputShare(t *testing.T) {
	var d reports.ShiftDetector
	got := shiftRun{tpi: constant(1000), tps: step(3600, 1598, 1000)}.run(&d, 0, 30000)
	if len(got) != 1 || got[0].sh.ThroughputShare < 0.9 ||
		!strings.Contains(got[0].sh.Reason, "throughput fell 1,598 → 1,000 tok/s (-37%): +") {
		t.Fatalf("throughput 1,598 -> 1,000 tok/s: warnings %+v; want one, all from throughput", got)
	}
}

func TestShiftNotOnNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var d reports.ShiftDetector
	got := shiftRun{tpi: constant(1000), noise: func() float64 { return 1 + 0.08*rng.NormFloat64() }}.run(&d, 0, 40000)
	if len(got) != 0 {
		t.Errorf("noise of 8%%: %d warnings, first %+v; want none", len(got), got[0])
	}
}

func TestShiftCooldownAndRearm(t *testing.T) {
	// Two steps ten minutes apart: one warning, then the second only after the cooldown.
	tpi := func(t float64) float64 {
		switch {
		case t < 3600:
			return 600
		case t < 4200:
			return 900
		}
		return 1400
	}
	var d reports.ShiftDetector
	got := shiftRun{tpi: tpi}.run(&d, 0, 30000)
	if len(got) != 2 || got[1].t-got[0].t < 1800 {
		t.Fatalf("two steps ten minutes apart: warnings at %v; want two, 30 min apart", got)
	}
	// After a warning, an estimate that keeps moving does not warn again until it settles.
	wild := func(t float64) float64 {
		switch {
		case t < 3600:
			return 600
		case t < 9000 && int(t/180)%2 == 0:
			return 900 // jumps by more than a shift every 3 minutes: never settles
		case t < 9000:
			return 1500
		}
		return 2000
	}
	d = reports.ShiftDetector{}
	got = shiftRun{tpi: wild}.run(&d, 0, 30000)
	if len(got) != 2 || got[1].t < 9000 {
		t.Fatalf("after a warning, an unsettled estimate: warnings at %v; want the next only once it settles after 9000", got)
	}
}

func TestShiftQuiet(t *testing.T) {
	stalled := func(t float64) string {
		if t >= 3600 && t < 7200 {
			return reports.StateStalled
		}
		return reports.StateRunning
	}
	var d reports.ShiftDetector
	// The finish moves by the whole stall; the stall was its own alert.
	if got := (shiftRun{tpi: constant(1000), state: stalled}).run(&d, 0, 30000); len(got) != 0 {
		t.Errorf("after a stall: warnings %+v; want none", got)
	}
	// Right after a restart the estimate is allowed to move.
	reset := 3600.0
	d = reports.ShiftDetector{}
	r := shiftRun{tpi: step(3600, 650, 1066), reset: &reset}
	if got := r.run(&d, 0, 3600+840); len(got) != 0 {
		t.Errorf("within 15 min of a restart: warnings %+v; want none", got)
	}
}

func TestShiftIgnoresWideRanges(t *testing.T) {
	var d reports.ShiftDetector
	for i, sec := range []float64{20000, 9000, 30000, 15000} {
		low, high := sec*0.5, sec*1.5 // a rough estimate
		e := reports.ETA{State: reports.StateRunning, Seconds: &sec, LowS: &low, HighS: &high, ItemsLeft: 1000}
		if _, ok := d.Update(e, float64(60*i), reports.ShiftConfig{}); ok || d.Announced {
			t.Fatalf("estimate %d with a ±50%% range: warned %v, announced %v; want neither", i, ok, d.Announced)
		}
	}
}

func TestShiftStatePersists(t *testing.T) {
	r := shiftRun{tpi: step(7200, 650, 1066)}
	var whole reports.ShiftDetector
	want := r.run(&whole, 0, 30000)
	var first reports.ShiftDetector
	left := 25000.0
	got := r.feed(&first, 0, 7230, &left) // stop just after the change, with a shift pending
	b, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	var second reports.ShiftDetector
	if err := json.Unmarshal(b, &second); err != nil {
		t.Fatal(err)
	}
	got = append(got, r.feed(&second, 7260, 30000, &left)...)
	if len(want) != 1 || len(got) != 1 || want[0].t != got[0].t || !reflect.DeepEqual(want[0].sh, got[0].sh) {
		t.Errorf("detector saved to JSON and restored: warnings %+v; want %+v", got, want)
	}
}

// TestShiftPaceWords: a move that neither tokens per item nor throughput explains is the items left against
// those the old estimate expected by now. Items done in a burst (cached answers) are ahead of its pace and
// finish earlier; items put back (retries) behind it, later. It read "progress against the old schedule".
func TestShiftPaceWords(t *testing.T) {
	tests := []struct {
		name  string
		jump  float64 // items left added at T 3600 (negative: done at once)
		words string
		sign  string
	}{
		{"burst of items done", -8000, "items finishing ahead of the old estimate's pace: -", "finish moved -"},
		{"items put back", 8000, "items finishing behind the old estimate's pace: +", "finish moved +"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d reports.ShiftDetector
			const tpi, tps = 1000.0, 1400.0
			left := 25000.0
			var got []reports.Shift
			for ts := 0.0; ts <= 12000 && left > 0; ts += 60 {
				left -= 60 * tps / tpi
				if ts == 3600 {
					left += tt.jump
				}
				sec := left * tpi / tps
				low, high := sec*0.95, sec*1.05
				e := reports.ETA{State: reports.StateRunning, Seconds: &sec, LowS: &low, HighS: &high, ItemsLeft: left,
					TokensPerItem: tpi, TokensPerS: tps, ItemsPerS: tps / tpi}
				if sh, ok := d.Update(e, ts, reports.ShiftConfig{}); ok {
					got = append(got, sh)
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0].Reason, tt.sign) || !strings.Contains(got[0].Reason, tt.words) ||
				strings.Contains(got[0].Reason, "schedule") {
				t.Fatalf("items left %+.0f at once, rates unchanged: warnings %+v; want one whose reason starts %q and says %q", tt.jump, got, tt.sign, tt.words)
			}
		})
	}
}

// TestShiftToldMovesTheBaseline: an estimate given to the channel (an answer, a scheduled status) is the one the
// next warning measures from, even one whose range is too wide for the detector to announce; the same move
// shown by an answer before it is confirmed is no warning. Estimates older than the baseline, rough ones and
// those before 5% done leave it alone.
func TestShiftToldMovesTheBaseline(t *testing.T) {
	eta := func(sec, wide float64) reports.ETA {
		low, high := sec*(1-wide), sec*(1+wide)
		return reports.ETA{State: reports.StateRunning, Seconds: &sec, LowS: &low, HighS: &high, ItemsLeft: 10000,
			TokensPerItem: 650, TokensPerS: 1400, ItemsPerS: 1400.0 / 650, Progress: 0.5}
	}
	var d reports.ShiftDetector
	d.Update(eta(7200, 0.05), 0, reports.ShiftConfig{}) // announced silently: finish at 7200
	if d.Shown {
		t.Fatal("the first estimate, taken silently, counts as shown")
	}
	// The finish moves to 10,200 (+50 min): an answer gives it, with a wide range, before a second sample confirms.
	d.Update(eta(10140, 0.05), 60, reports.ShiftConfig{})
	if !d.Told(eta(10140, 0.4), 60, reports.ShiftConfig{}) || !d.Shown || d.FinishT != 10200 {
		t.Fatalf("told the 60 s estimate: baseline %+v; want the finish it gave, 10200, shown", d)
	}
	if sh, ok := d.Update(eta(10080, 0.05), 120, reports.ShiftConfig{}); ok {
		t.Errorf("warning %q after an answer showed the move; want none", sh.Reason)
	}
	for name, e := range map[string]reports.ETA{
		"older":      eta(5000, 0.05),
		"rough":      func() reports.ETA { e := eta(5000, 0.05); e.Rough = true; return e }(),
		"before 5%":  func() reports.ETA { e := eta(5000, 0.05); e.Progress = 0.01; return e }(),
		"not moving": {State: reports.StateStalled},
	} {
		at := 180.0
		if name == "older" {
			at = 30
		}
		if before := d; d.Told(e, at, reports.ShiftConfig{}) || !reflect.DeepEqual(d, before) {
			t.Errorf("told an estimate %s: the baseline changed to %+v", name, d)
			d = before
		}
	}
	// Moved again, with nobody told: the warning measures from the ETA last given and says so.
	var sh reports.Shift
	var ok bool
	for t0 := 180.0; t0 <= 300 && !ok; t0 += 60 {
		sh, ok = d.Update(eta(14000-t0, 0.05), t0, reports.ShiftConfig{})
	}
	if !ok || sh.FromFinish != 10200 || sh.FromAt != 60 || !sh.FromShown {
		t.Fatalf("warning %v %+v; want one from the finish last given (10200, at 60 s)", ok, sh)
	}
	if lead := reports.PlainText(reports.ShiftLead(sh, time.UTC)); !strings.Contains(lead, "from 02:50 UTC in the ETA last given, at 00:01 UTC") {
		t.Errorf("ShiftLead = %q; want it to name the finish and the time of the ETA last given", lead)
	}
}
