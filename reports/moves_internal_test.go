package reports

import (
	"strings"
	"testing"
	"time"

	"runwatch/reports/estimate"
)

// TestMoveBreakdownLeavesOutNoise checks that a part that barely changed (under half a percent, "+0%") gets no
// bullet, and one that changed does.
func TestMoveBreakdownLeavesOutNoise(t *testing.T) {
	sh := Shift{FromFinish: 1000, ToFinish: 4600, TokensPerItemShare: 0.98, ThroughputShare: -0.01, OtherShare: 0.03,
		From: ShiftParts{TokensPerItem: 652, TokensPerS: 1352, ItemsLeft: 22596},
		To:   ShiftParts{TokensPerItem: 903, TokensPerS: 1355, ItemsLeft: 19623}}
	got := strings.Join(moveBreakdown(sh), "\n")
	if strings.Contains(got, "throughput") || !strings.Contains(got, "completions grew 652 → 903") {
		t.Errorf("moveBreakdown = %q; want the completions and no throughput bullet (1,352 → 1,355 tok/s, +0%%)", got)
	}
	sh.To.TokensPerS = 1200
	if got := strings.Join(moveBreakdown(sh), "\n"); !strings.Contains(got, "throughput fell") {
		t.Errorf("moveBreakdown = %q; want a throughput bullet for 1,352 → 1,200 tok/s", got)
	}
}

// TestLastMoveLineFirstIsAnnounced: with no re-announcement the first estimate is the announced one, and the line
// names it once instead of as two estimates of the same minute.
func TestLastMoveLineFirstIsAnnounced(t *testing.T) {
	mark := EstimateMark{At: 1795943940, FinishT: 1795943940 + 9000}
	l := &MoveLog{First: &mark, Announced: &mark, Drift: &Shift{FromFinish: mark.FinishT, ToFinish: mark.FinishT + 3180}}
	got := PlainText(LastMoveLine(l, nil, time.UTC))
	if want := "No sharp move since the first baseline estimate, at 09:19 UTC (finish 11:49 UTC); the finish is +53 min against it now."; got != want {
		t.Errorf("LastMoveLine = %q; want %q", got, want)
	}
	// An ETA given since is the one the finish is measured from; a move of two minutes is the same answer again.
	later := EstimateMark{At: mark.At + 3600, FinishT: mark.FinishT + 600}
	l.Announced, l.Drift = &later, &Shift{At: later.At + 60, FromFinish: later.FinishT, FromShown: true, ToFinish: later.FinishT + 120}
	if got, want := PlainText(LastMoveLine(l, nil, time.UTC)), "(finish 11:49 UTC)."; !strings.HasSuffix(got, want) {
		t.Errorf("LastMoveLine = %q; want it to end %q", got, want)
	}
	l.Drift = &Shift{At: later.At + 60, FromFinish: later.FinishT, FromShown: true, ToFinish: later.FinishT + 2400, TokensPerItemShare: 0.9,
		OtherShare: 0.1, From: ShiftParts{TokensPerItem: 825, TokensPerS: 1351}, To: ShiftParts{TokensPerItem: 1018, TokensPerS: 1351}}
	if got, want := PlainText(LastMoveLine(l, nil, time.UTC)), " Since the ETA last given, at 10:19 UTC (finish 11:59 UTC), the finish is +40 min, mostly longer completions (825 → 1,018 tokens each)."; !strings.HasSuffix(got, want) {
		t.Errorf("LastMoveLine = %q; want it to end %q", got, want)
	}
}

// TestLastMoveLineWithoutAnEstimate: before the first baseline estimate the move line stays out, whatever the
// ETA: "no baseline estimate yet, so none has moved" under every early answer told the reader nothing, and
// before any estimate the ETA line says why there is none.
func TestLastMoveLineWithoutAnEstimate(t *testing.T) {
	sec := 3600.0
	for name, e := range map[string]*ETA{
		"no estimate": {State: StateUnknown, Reason: "need a second sample"},
		"rough":       {State: StateRunning, Seconds: &sec, Rough: true},
		"stalled":     {State: StateStalled},
	} {
		if got := LastMoveLine(&MoveLog{}, e, time.UTC); got != "" {
			t.Errorf("LastMoveLine(%s) = %q; want none", name, got)
		}
	}
}

// TestAnswerWhyAfterTheFinish: the last line of a finished run's why answer is its finish, without "Now:"
// before the glyph ("Now: [done] Done: all 25,000 items finished.").
func TestAnswerWhyAfterTheFinish(t *testing.T) {
	mark := EstimateMark{At: 1795943940, FinishT: 1795943940 + 9000}
	l := &MoveLog{First: &mark, Announced: &mark, Moves: []Shift{{At: mark.At + 600, FromFinish: mark.FinishT, ToFinish: mark.FinishT + 3000}}}
	text := AnswerWhy("demo", &ETA{State: StateDone, Reason: "all 25,000 items finished"}, l, time.UTC).Text()
	lines := strings.Split(text, "\n")
	if last := lines[len(lines)-1]; last != "[done] Done: all 25,000 items finished." {
		t.Errorf("AnswerWhy after the finish ends %q; want the finish line alone\n%s", last, text)
	}
}

// A move whose old finish is already past says when it was due: the stragglers' "finish moved +21 min (0 s → 10
// min left)" read as a move of 10 min.
func TestLeftSpanOfAPassedFinish(t *testing.T) {
	for _, tt := range []struct {
		from, to, at float64
		want         string
	}{
		{9000, 12180, 0, "2 h 30 min → 3 h 23 min left"},
		{1000, 1000 + 21*60, 1000 + 11*60, "due 11 min ago → 10 min left"},
		{1000, 1600, 1000, "0 s → 10 min left"},
	} {
		if got := leftSpan(tt.from, tt.to, tt.at); got != tt.want {
			t.Errorf("leftSpan(%v, %v, %v) = %q; want %q", tt.from, tt.to, tt.at, got, tt.want)
		}
	}
	sh := Shift{At: 1660, FromFinish: 1000, ToFinish: 2920}
	got := PlainText(LastMoveLine(&MoveLog{Moves: []Shift{sh}}, nil, time.UTC))
	if want := "(due 11 min ago → 21 min left)"; !strings.Contains(got, want) {
		t.Errorf("LastMoveLine = %q; want %q", got, want)
	}
}

// TestAnswerOnTrackMatchesItsClocks: the on-track answer set "finish around 16:08" beside "1 h 37 min later than
// the first baseline estimate (…, finish 14:30)": the finishes were 16:08:10 and 14:30:50. The gap is the one
// the clock times show; under 90 s it stays exact.
func TestAnswerOnTrackMatchesItsClocks(t *testing.T) {
	first := EstimateMark{At: 1796556240, FinishT: 1796567450}     // 11:24:00, finish 14:30:50 UTC
	announced := EstimateMark{At: 1796558400, FinishT: 1796573050} // 12:00:00, finish 16:04:10
	sec, now := 3*3600.0, 1796562490.0                             // 13:08:10 now
	finish := estimate.Unix(now + sec)                             // 16:08:10
	e := &ETA{State: StateRunning, Seconds: &sec, FinishAt: &finish}
	l := &MoveLog{First: &first, Announced: &announced}
	got := AnswerOnTrack("demo", e, l, nil, time.UTC).Text()
	for _, want := range []string{"finish around Sun 6 Dec 16:08 UTC, 1 h 38 min later than the first baseline estimate (at 11:24 UTC, finish 14:30 UTC)",
		"Against the baseline estimate of 12:00 UTC (finish 16:04 UTC, the one warnings compare against) it is +4 min."} {
		if !strings.Contains(got, want) {
			t.Errorf("AnswerOnTrack = %q; want %q", got, want)
		}
	}
	announced.FinishT = now + sec - 23 // 16:07:47: the same minute's neighbour, said exactly
	if got := AnswerOnTrack("demo", e, l, nil, time.UTC).Text(); !strings.Contains(got, "it is +23 s.") {
		t.Errorf("AnswerOnTrack = %q; want the 23 s gap as it is", got)
	}
}

// TestDriftSaysTheEstimatorChanged: a finish that jumped between two answers because another estimator priced the
// items left says so beside its figures (the demo's 3 h 5 min → 3 h 30 min ten seconds apart read "mostly longer
// completions" while the new answer was priced at the latest item rate).
func TestDriftSaysTheEstimatorChanged(t *testing.T) {
	given := EstimateMark{At: 1795943940, FinishT: 1795943940 + 11100}
	l := &MoveLog{First: &EstimateMark{At: given.At - 600, FinishT: given.FinishT - 900}, Announced: &given,
		Drift: &Shift{At: given.At + 10, FromFinish: given.FinishT, FromShown: true, ToFinish: given.FinishT + 1620,
			TokensPerItemShare: 0.7, ThroughputShare: 0.3,
			From: ShiftParts{TokensPerItem: 695, TokensPerS: 1358, Estimator: "the structural model"},
			To:   ShiftParts{TokensPerItem: 769, TokensPerS: 1307, Estimator: "items over the last block"}}}
	want := "Since the ETA last given, at 09:19 UTC (finish 12:24 UTC), the finish is +27 min, mostly longer completions (695 → 769 tokens each); the estimate now prices the items at the latest item rate (before: tokens per item and tok/s)."
	if got := PlainText(LastMoveLine(l, nil, time.UTC)); !strings.HasSuffix(got, want) {
		t.Errorf("LastMoveLine = %q; want it to end %q", got, want)
	}
	if got := strings.Join(moveBreakdown(*l.Drift), "\n"); !strings.Contains(got, "• the estimate now prices the items at the latest item rate") {
		t.Errorf("moveBreakdown = %q; want a bullet for the estimator that changed", got)
	}
}

// TestLastMoveLineSaysTheSlowMove: answered every few seconds, each ETA is the baseline of the next and no move
// is sharp, while the finish drifts by an hour and a half; the line says so rather than "No sharp move since the
// first baseline estimate (finish 13:26)" beside "done around 15:03".
func TestLastMoveLineSaysTheSlowMove(t *testing.T) {
	first := EstimateMark{At: 1795943940, FinishT: 1795943940 + 11160}
	given := EstimateMark{At: first.At + 9000, FinishT: first.FinishT + 5800}
	sec := first.FinishT + 5820 - (given.At + 10)
	e := &ETA{State: StateRunning, At: given.At + 10, Seconds: &sec}
	l := &MoveLog{First: &first, Announced: &given, Drift: &Shift{At: e.At, FromFinish: given.FinishT, FromShown: true, ToFinish: e.At + sec}}
	want := "No sharp move since the first baseline estimate, at 09:19 UTC (finish 12:25 UTC); the finish has moved +1 h 37 min since, in smaller steps."
	if got := PlainText(LastMoveLine(l, e, time.UTC)); got != want {
		t.Errorf("LastMoveLine = %q; want %q", got, want)
	}
}
