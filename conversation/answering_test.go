package conversation

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/internal/testkit"
	"runwatch/monitor"
	"runwatch/reports"
)

// gatedRuns is the fake monitor with a RunStatus that counts its calls and waits for release (or panics,
// with boom set), so that questions asked meanwhile are in flight together.
type gatedRuns struct {
	*testkit.FakeRuns
	calls   atomic.Int32
	release chan struct{}
	boom    bool
}

func (g *gatedRuns) RunStatus(ctx context.Context, name string, need monitor.Need) (reports.RunStatus, error) {
	g.calls.Add(1)
	<-g.release
	if g.boom {
		panic("the status blew up")
	}
	return g.FakeRuns.RunStatus(ctx, name, need)
}

// answersFor is Answers over b with n slots, its goroutines waited for when the test ends.
func answersFor(t *testing.T, b *Bot, n int) *Answers {
	s := NewAnswers(b, make(chan struct{}, n))
	t.Cleanup(func() { s.Wait(time.Minute) })
	return s
}

// TestAnswersShareOneEvaluation: fifty identical questions asked while the first is being answered cost one
// evaluation and one slot, and all get its answer; a different question, or the same one from an admin (whose
// refusals differ), is its own; a change is never shared.
func TestAnswersShareOneEvaluation(t *testing.T) {
	runs := &gatedRuns{FakeRuns: testkit.ReplyRuns(t), release: make(chan struct{})}
	b := NewBot(runs, time.UTC, config.Env{Admins: []string{"UADMIN"}})
	s := answersFor(t, b, 2)
	ctx := context.Background()
	eta := Request{Text: "ETA?", Channel: "C1", User: "U222", Source: "mention"}
	first := s.Begin(ctx, eta)
	var all []*Answering
	for i := range 50 {
		req := eta
		if i%2 == 1 {
			req.Text, req.User = " eta? ", "U333" // case and spacing aside, another non-admin: the same question
		}
		all = append(all, s.Begin(ctx, req))
	}
	for i, a := range all {
		if a != first {
			t.Fatalf("question %d got its own evaluation; want it to join the first", i)
		}
	}
	admin := eta
	admin.User = "UADMIN"
	if s.Begin(ctx, admin) == first {
		t.Errorf("an admin's question joined a non-admin's; want them apart")
	}
	if a := s.Begin(ctx, Request{Text: "snooze 2h", Channel: "C1", User: "UADMIN", Source: "mention"}); a == s.Begin(ctx, Request{Text: "snooze 2h", Channel: "C1", User: "UADMIN", Source: "mention"}) {
		t.Errorf("two snoozes shared one answer; want each its own act")
	}
	close(runs.release)
	rep, ok := first.Wait(ctx)
	if !ok || rep.Intent != "eta" || rep.Refused {
		t.Fatalf("the shared answer = %+v, %v; want the ETA", rep, ok)
	}
	for _, a := range all {
		if got, _ := a.Wait(ctx); got.Message.Text() != rep.Message.Text() {
			t.Fatalf("a joined question got %q; want the shared answer", got.Message.Text())
		}
	}
	if n := runs.calls.Load(); n != 2 {
		t.Errorf("RunStatus calls = %d; want 2 (the shared ETA and the admin's)", n)
	}
}

// TestAnswersPanicIsAFailureReply: an answer that panics in flight is a reply saying it failed, for the
// question that started it and every one that joined it, and the next question is answered.
func TestAnswersPanicIsAFailureReply(t *testing.T) {
	runs := &gatedRuns{FakeRuns: testkit.ReplyRuns(t), release: make(chan struct{}), boom: true}
	b := NewBot(runs, time.UTC, config.Env{})
	s := answersFor(t, b, 1)
	ctx := context.Background()
	req := Request{Text: "ETA?", Channel: "C1", User: "U222", Source: "mention"}
	first, joined := s.Begin(ctx, req), s.Begin(ctx, req)
	close(runs.release)
	for _, a := range []*Answering{first, joined} {
		if rep, ok := a.Wait(ctx); !ok || rep.Intent != "failed" || !rep.Refused {
			t.Errorf("answer after a panic = %+v, %v; want the failure reply", rep, ok)
		}
	}
	runs.boom = false
	if rep, _ := s.Begin(ctx, Request{Text: "help", Source: "mention", Channel: "C1", User: "U222"}).Wait(ctx); rep.Intent != "help" {
		t.Errorf("help after a failed answer = %+v; want it answered", rep)
	}
}
