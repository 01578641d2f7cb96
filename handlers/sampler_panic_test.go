package handlers

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/internal/testkit"
	"runwatch/monitor"
)

// TestSamplerSurvivesAPanic: a sample that panics (here in the evaluation hook, standing in for a state file
// or a sample nobody foresaw) is logged with its stack and the sampler goes on to the next; it stopped the
// whole bot before, and again on every restart.
func TestSamplerSurvivesAPanic(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	logs := &testkit.LogBuffer{}
	s := NewSampler(e.bot, time.Millisecond, logs.Logger())
	var ticks atomic.Int32
	again := make(chan struct{})
	s.OnEvaluate = func([]monitor.Evaluation) {
		switch ticks.Add(1) {
		case 1:
			panic("a sample nobody foresaw")
		case 2:
			close(again)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	select {
	case <-again:
	case <-time.After(30 * time.Second):
		t.Fatal("no sample after the one that panicked")
	}
	cancel()
	<-done
	if !strings.Contains(logs.String(), "a sample failed with a panic") || !strings.Contains(logs.String(), "a sample nobody foresaw") {
		t.Errorf("log = %q; want the panic logged", logs.String())
	}
}
