package posts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/monitor"
	"runwatch/reports"
	"runwatch/state"
)

// DefaultSchedule is a run's status schedule when the run file sets none.
const DefaultSchedule = "@hourly"

const scheduleStateFile = "schedule.json"

// Errors a poster's calls wrap (errors.Is) to tell the scheduler what became of a post.
var (
	// ErrGone says the message cannot be edited any more (deleted, too old, its channel archived):
	// the living message is posted anew.
	ErrGone = errors.New("the message is gone")
	// ErrRefused says the chat service answered and refused the call: asking again will not change it.
	ErrRefused = errors.New("refused by the chat service")
	// ErrChartsRefused says the chat service refused the message's charts: it goes without them, the
	// chart as a PNG beside it.
	ErrChartsRefused = errors.New("charts refused")
	// ErrHeldBack says a post was not sent: its channel refused the last one (the bot is not in it), and
	// the chat service said so once already; it is tried again later.
	ErrHeldBack = errors.New("held back: the channel refused the last post")
)

// Poster is what the scheduler needs from Slack: posts tagged with an intent ID, and the
// look-up of a tagged post a crash interrupted.
type Poster interface {
	PostTagged(ctx context.Context, channel, threadTS, id string, m reports.Message) (string, string, error)
	FindTagged(ctx context.Context, channel, threadTS, id string, since time.Time) (string, error)
	Update(ctx context.Context, channel, ts string, m reports.Message) error
	Upload(ctx context.Context, channel, threadTS string, f conversation.Attachment) error
}

// scheduleMemo is what the scheduler remembers about one run's posts, persisted so that a restart
// neither posts twice nor loses the living message or the day's thread.
type scheduleMemo struct {
	Channel   string    `json:"channel"`    // the channel as configured, to notice a change
	ChannelID string    `json:"channel_id"` // as Slack reported it (chat.update needs the id)
	LivingTS  string    `json:"living_ts,omitempty"`
	ParentTS  string    `json:"parent_ts,omitempty"`
	ParentDay string    `json:"parent_day,omitempty"`
	LastPost  time.Time `json:"last_post"` // when the last scheduled status was posted
	Digest    string    `json:"digest,omitempty"`
	// Pending marks a due post that failed; it is retried on the next sample, not lost.
	Pending bool `json:"pending,omitempty"`
	// NoCharts records that Slack refused the data_visualization block here: later posts go
	// without it, with the chart as a PNG.
	NoCharts bool `json:"no_charts,omitempty"`
	// Intent is the post in flight, saved before it is sent and cleared when Slack answers: one
	// found after a restart was interrupted by a crash, and Slack is asked whether it landed.
	Intent *scheduleIntent `json:"intent,omitempty"`
}

// scheduleIntent is a status post that may have landed: its ID (in the message's metadata), when
// it was made, where, what it was (a new status, the living message, the day's parent, a reply)
// and the status's digest.
type scheduleIntent struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Timeout is the post's call's (zero in state saved before it was recorded: DeliverTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	Thread  string        `json:"thread,omitempty"`
	Role    string        `json:"role"`
	Day     string        `json:"day,omitempty"`
	Digest  string        `json:"digest"`
}

type scheduleFile struct {
	Runs map[string]*scheduleMemo `json:"runs"`
}

// Scheduler posts each run's status to its channel on the run's cron schedule (`schedule:`, default
// @hourly), in the run's post mode: new (a message per post), update (one living message edited in
// place) or thread (replies under a parent posted once a day). A status that did not change since
// the last post is not posted again, and no run is posted more often than its schedule, restarts
// included.
type Scheduler struct {
	bot     *conversation.Bot
	poster  Poster
	dir     *state.Dir
	log     *slog.Logger
	metrics *botmetrics.Metrics
	// Clock tells the time and waits for the next fire; nil means the wall clock. Tests step it.
	Clock Clock
	// PostTimeout bounds the delivery of one status (its tries, and the chart's fallback), as a warning's
	// (RUNWATCH_POST_TIMEOUT); zero: DeliverTimeout.
	PostTimeout time.Duration

	mu    sync.Mutex // serialises posts and guards memo
	memo  scheduleFile
	specs map[string]cron.Schedule

	stop     chan struct{}
	stopOnce sync.Once
	running  sync.WaitGroup
}

// Clock is a scheduler's time: what time it is, and a wait until a later one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// WallClock is the real time.
type WallClock struct{}

func (WallClock) Now() time.Time                         { return time.Now() }
func (WallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (s *Scheduler) postTimeout() time.Duration {
	if s.PostTimeout > 0 {
		return s.PostTimeout
	}
	return DeliverTimeout
}

func (s *Scheduler) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// NewScheduler prepares the schedules of every run with a channel; dir (nil: memory only) keeps
// what was posted where. An invalid cron spec is an error naming the run.
func NewScheduler(b *conversation.Bot, p Poster, dir *state.Dir, log *slog.Logger, m *botmetrics.Metrics) (*Scheduler, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{bot: b, poster: p, dir: dir, log: log, metrics: m,
		memo: scheduleFile{Runs: map[string]*scheduleMemo{}}, specs: map[string]cron.Schedule{}}
	for _, r := range b.Monitor().Config().Runs {
		if r.Channel == "" {
			continue
		}
		spec := r.Schedule
		if spec == "" {
			spec = DefaultSchedule
		}
		sch, err := cron.ParseStandard(spec)
		if err != nil {
			return nil, fmt.Errorf("run %s: schedule %q is not a cron spec (use e.g. @hourly, @every 30m or \"0 * * * *\"): %w", r.Name, spec, err)
		}
		s.specs[r.Name] = sch
	}
	if dir != nil {
		var f scheduleFile
		err := dir.Load(scheduleStateFile, &f)
		switch {
		case err == nil && f.Runs != nil:
			for name, m := range f.Runs {
				if m == nil { // a hand edit: nothing to restore, and it would be dereferenced
					delete(f.Runs, name)
				}
			}
			s.memo = f
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			log.Warn("scheduled-post state not restored; the next post starts a new message", "err", err)
		}
	}
	for _, r := range b.Monitor().Config().Runs {
		if m := s.memo.Runs[r.Name]; m != nil && m.Channel == r.Channel {
			b.LearnChannel(r.Channel, m.ChannelID)
		}
	}
	return s, nil
}

// Start runs the schedules until Stop or until ctx ends: one goroutine per run waits on the clock
// for the spec's next time in the bot's time zone, then posts. A time the schedule passed while no
// bot ran (a restart across the hour) is posted at once: waiting for the next one would lose it.
// The wait is taken in steps of at most maxScheduleSleep, each re-reading the clock: a timer counts
// elapsed time, which a suspended machine or a clock stepped by NTP does not advance with the wall
// clock the schedule names.
func (s *Scheduler) Start(ctx context.Context) {
	clock := s.Clock
	if clock == nil {
		clock = WallClock{}
	}
	s.stop = make(chan struct{})
	for name, sch := range s.specs {
		due := sch.Next(clock.Now().In(s.bot.Location()))
		// A missed time is posted now, unless the next is about to come (within a tenth of the period):
		// a restart at 10:59:59.96 posted the missed 10:00 and then 11:00 40 ms later, two statuses in a row.
		if s.missed(name, sch, clock.Now()) && due.Sub(clock.Now()) > sch.Next(due).Sub(due)/10 {
			due = clock.Now()
		}
		s.running.Add(1)
		go func() {
			defer s.running.Done()
			for {
				for wait := due.Sub(clock.Now()); wait > 0; wait = due.Sub(clock.Now()) {
					select {
					case <-ctx.Done():
						return
					case <-s.stop:
						return
					case <-clock.After(min(wait, maxScheduleSleep)):
					}
				}
				if err := s.fire(ctx, name, clock.Now(), false); err != nil {
					s.logFailed("scheduled status not posted; will retry", name, err)
				}
				due = sch.Next(clock.Now().In(s.bot.Location()))
			}
		}()
	}
}

// maxScheduleSleep is the longest a schedule waits before it reads the clock again: a post is
// at most this late after a suspend or a clock step.
const maxScheduleSleep = time.Minute

// missed reports whether run's schedule had a time between its last post (before a restart) and
// now. A run never posted, or whose post is pending, is not: the first waits for its schedule, the
// second is retried by RetryPending.
func (s *Scheduler) missed(name string, sch cron.Schedule, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.memo.Runs[name]
	if m == nil || m.LastPost.IsZero() || m.Pending || m.Intent != nil {
		return false
	}
	r, ok := s.bot.Monitor().Config().RunByName(name)
	if !ok || m.Channel != r.Channel {
		return false
	}
	return !sch.Next(m.LastPost.In(s.bot.Location())).After(now)
}

// Stop stops the schedules and waits (at most d) for a post in progress.
func (s *Scheduler) Stop(d time.Duration) {
	if s.stop == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.stop) })
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// RetryPending posts the statuses whose scheduled post failed, or was interrupted by a crash and
// did not land; the sampler calls it after each tick.
func (s *Scheduler) RetryPending(ctx context.Context) {
	s.mu.Lock()
	var names []string
	for name, m := range s.memo.Runs {
		if m.Pending || m.Intent != nil {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	for _, name := range names {
		if err := s.fire(ctx, name, s.now(), true); err != nil {
			s.logFailed("scheduled status still not posted", name, err)
		}
	}
}

// logFailed logs a status that was not posted: a warning, or a debug line when its channel's refusal was
// said already (ErrHeldBack).
func (s *Scheduler) logFailed(msg, run string, err error) {
	if errors.Is(err, ErrHeldBack) {
		s.log.Debug(msg+": its channel refused the last post", "run", run, "err", err)
		return
	}
	s.log.Warn(msg, "run", run, "err", err)
}

func (s *Scheduler) memoFor(r *config.Run) *scheduleMemo {
	m := s.memo.Runs[r.Name]
	if m == nil || m.Channel != r.Channel {
		// New run, or its channel moved: start afresh there.
		m = &scheduleMemo{Channel: r.Channel}
		s.memo.Runs[r.Name] = m
	}
	return m
}

// Fire posts run's status now if it is due: what its schedule does at its time.
func (s *Scheduler) Fire(ctx context.Context, name string, now time.Time) error {
	return s.fire(ctx, name, now, false)
}

// fire posts run's status if it is due at now: not before the schedule's next time after the last
// post (so a restart does not post early), and only if the status changed. retry forces a post
// that failed earlier.
func (s *Scheduler) fire(ctx context.Context, name string, now time.Time, retry bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// dated is now, moved on by the time this fire has taken: the time of a post is when it was sent
	// (what the channel sees), not when it fell due.
	start := s.now()
	dated := func() time.Time { return now.Add(s.now().Sub(start)).UTC() }
	r, ok := s.bot.Monitor().Config().RunByName(name)
	sch := s.specs[name]
	if !ok || sch == nil {
		return nil
	}
	if !s.bot.PostAllowed(r, r.Channel) {
		s.log.Debug("scheduled status not posted: the run's channel is not in allowed_channels", "run", name, "channel", r.Channel)
		return nil
	}
	m := s.memoFor(r)
	if m.Intent != nil {
		if now.Sub(m.Intent.At) < lookUpAfter(m.Intent.Timeout) {
			// The post a crash interrupted may still be under way at Slack: asked now, it would say it has none.
			s.log.Debug("a status post interrupted by a restart is looked up once its call's timeout has passed", "run", name)
			return nil
		}
		if err := s.settle(ctx, r, m, now); err != nil {
			return err
		}
	}
	if retry && !m.Pending {
		return nil
	}
	// cron rounds to whole seconds; a second of slack keeps an on-time fire due. The schedule is
	// read in the bot's zone, as Start reads it: in UTC, a local 09:00 the day the clocks change
	// would fall an hour after the day's fire, and be skipped.
	if !m.Pending && !m.LastPost.IsZero() && sch.Next(m.LastPost.In(s.bot.Location())).After(now.Add(time.Second)) {
		s.log.Debug("scheduled status not due yet", "run", name, "last", m.LastPost)
		return nil
	}
	rs, err := s.bot.Monitor().RunStatus(ctx, name, monitor.All)
	if err != nil {
		return err
	}
	msg := s.bot.StatusMessage(rs, false)
	digest := statusDigest(msg)
	if rs.End() == reports.EndDone {
		digest = finishedDigest(rs)
	}
	if digest == m.Digest && !m.Pending {
		s.log.Debug("status unchanged; not posted again", "run", name)
		return nil
	}
	if !m.NoCharts {
		// Drawn for a status that goes out only: the digest leaves the charts out.
		msg.Charts = s.bot.TrendCharts(r.Name)
	}
	channel := m.ChannelID
	if channel == "" {
		channel = r.Channel
	}
	mode := r.PostMode
	if mode == "" {
		mode = config.DefaultPostMode // one living message, not a fresh ~2,000 characters every hour
	}
	pctx, cancel := context.WithTimeout(ctx, s.postTimeout())
	defer cancel()
	ch, thread, fresh, err := s.deliver(pctx, r, m, mode, channel, msg, digest, now, dated)
	if err != nil && len(msg.Charts) > 0 && errors.Is(err, ErrChartsRefused) {
		s.log.Info("Slack refused the chart block; posting without it, with the chart as a PNG", "run", name, "err", err)
		m.NoCharts, msg.Charts = true, nil
		ch, thread, _, err = s.deliver(pctx, r, m, mode, channel, msg, digest, now, dated)
		fresh = true // the chart is shown once as a PNG even where the status is edited in place
	}
	if err == nil && m.NoCharts && fresh {
		s.uploadChart(pctx, r.Name, ch, thread)
	}
	s.metrics.Posted("status_"+mode, err)
	if err != nil {
		m.Pending = true
		s.save()
		return err
	}
	if ch != "" {
		m.ChannelID = ch
		s.bot.LearnChannel(r.Channel, ch)
	}
	// The post is dated when the channel got it, not when it was due: a status that took a while to build
	// and send (a loaded machine, Slack slow to answer) and then a restart must not put the next one in
	// the channel sooner than its schedule after it.
	m.LastPost, m.Digest, m.Pending = dated(), digest, false
	s.save()
	return nil
}

// settle decides a post a crash interrupted: one Slack has counts as posted at its time (and is
// the living message or the day's parent if it was to be); one Slack does not have leaves the
// status due, to be posted now. While Slack does not answer, the run waits (pendingGiveUp at most);
// when Slack refuses the look-up, the status is posted again at once.
func (s *Scheduler) settle(ctx context.Context, r *config.Run, m *scheduleMemo, now time.Time) error {
	in := m.Intent
	channel := m.ChannelID
	if channel == "" {
		channel = s.bot.ChannelID(r.Channel)
	}
	fctx, cancel := context.WithTimeout(ctx, s.postTimeout()) // a look-up is a Slack call like the post
	ts, err := s.poster.FindTagged(fctx, channel, in.Thread, in.ID, in.At)
	cancel()
	if err != nil {
		// Slack's own refusal (a channel named, not an id; no channels:history scope) will not
		// change: post again now. A Slack that does not answer is asked again, up to pendingGiveUp.
		if !errors.Is(err, ErrRefused) && now.Sub(in.At) < pendingGiveUp {
			return fmt.Errorf("cannot tell whether the status posted before a restart landed: %w", err)
		}
		s.log.Warn("cannot tell whether the status posted before a restart landed; posting it again", "run", r.Name, "err", err)
	}
	if ts != "" {
		s.log.Info("a status post interrupted by a restart had landed; not posting it again", "run", r.Name)
		switch in.Role {
		case "living":
			m.LivingTS = ts
		case "parent":
			m.ParentTS, m.ParentDay = ts, in.Day
		}
		m.LastPost, m.Digest, m.Pending = in.At, in.Digest, false
	} else {
		m.Pending = true
	}
	m.Intent = nil
	s.save()
	return nil
}

// post sends one status message, tagged with an intent saved first, so that a crash before
// Slack's answer is settled on restart rather than posted twice.
func (s *Scheduler) post(ctx context.Context, m *scheduleMemo, channel, thread string, in scheduleIntent, msg reports.Message) (string, string, error) {
	in.ID, in.Thread = newPostID(), thread
	m.Intent = &in
	s.save()
	ch, ts, err := s.poster.PostTagged(ctx, channel, thread, in.ID, msg)
	m.Intent = nil
	return ch, ts, err
}

// deliver posts msg in the run's post mode and says where it landed: the channel id, the thread
// it went in ("" for top level) and whether it is a new message (not an edit).
func (s *Scheduler) deliver(ctx context.Context, r *config.Run, m *scheduleMemo, mode, channel string, msg reports.Message, digest string, now time.Time, dated func() time.Time) (ch, thread string, fresh bool, err error) {
	intent := func(role, day string) scheduleIntent {
		return scheduleIntent{At: dated(), Timeout: s.postTimeout(), Role: role, Day: day, Digest: digest}
	}
	switch mode {
	case "update":
		if m.LivingTS != "" {
			// An edit has no intent to settle after a crash: it is recorded as made before it is sent, so
			// that one Slack took just before a kill -9 is not made again at once by the restarted bot (the
			// edit that did not land waits for the next time instead: an edit may be late, never doubled).
			prev := m.LastPost
			m.LastPost = dated()
			s.save()
			err = s.poster.Update(ctx, channel, m.LivingTS, msg)
			if err != nil {
				m.LastPost = prev
			}
			if err == nil || !errors.Is(err, ErrGone) {
				return channel, "", false, err
			}
			s.log.Info("living status message is gone; posting a new one", "run", r.Name, "err", err)
		}
		var ts string
		ch, ts, err = s.post(ctx, m, channel, "", intent("living", ""), msg)
		if err == nil {
			m.LivingTS = ts
		}
		return ch, "", true, err
	case "thread":
		day := now.In(s.bot.Location()).Format("2006-01-02")
		parent := msg
		parent.Title = fmt.Sprintf("%s · status for %s", r.Name, now.In(s.bot.Location()).Format("Mon 2 Jan"))
		parent.Context = append(append([]string{}, msg.Context...), "hourly updates in the thread")
		if m.ParentTS == "" || m.ParentDay != day {
			var ts string
			ch, ts, err = s.post(ctx, m, channel, "", intent("parent", day), parent)
			if err == nil {
				m.ParentTS, m.ParentDay = ts, day
			}
			return ch, ts, true, err
		}
		ch, _, err = s.post(ctx, m, channel, m.ParentTS, intent("reply", ""), msg)
		if err == nil {
			// The day's parent shows the latest figures, not the morning's: the thread holds the history (and
			// the charts, which the edit leaves out).
			parent.Charts = nil
			if uerr := s.poster.Update(ctx, ch, m.ParentTS, parent); uerr != nil {
				s.log.Warn("the day's status parent not brought up to date", "run", r.Name, "err", uerr)
			}
		}
		return ch, m.ParentTS, true, err
	}
	ch, _, err = s.post(ctx, m, channel, "", intent("new", ""), msg)
	return ch, "", true, err
}

// uploadChart shares the run's chart as a PNG beside a status whose chart block Slack refused.
func (s *Scheduler) uploadChart(ctx context.Context, run, channel, thread string) {
	png, err := reports.RenderChart(s.bot.Monitor().History(run), s.bot.Monitor().EstimateConfig(run), reports.ChartOptions{
		Title: run + " · throughput and ETA", Loc: s.bot.Location(), Memo: s.bot.ChartMemo(run)})
	if err != nil {
		return // not enough history yet: the status says so itself
	}
	err = s.poster.Upload(ctx, channel, thread, conversation.Attachment{Name: run + "-chart.png", Title: run + " throughput and ETA", Data: png,
		AltText: "Chart of " + run + ": throughput (top) and ETA with its range (bottom)"})
	s.metrics.Posted("upload", err)
	if err != nil {
		s.log.Warn("chart PNG not uploaded", "run", run, "err", err)
	}
}

func (s *Scheduler) save() {
	if s.dir == nil {
		return
	}
	if err := s.dir.Save(scheduleStateFile, s.memo); err != nil {
		s.log.Warn("scheduled-post state not saved", "err", err)
	}
}

// finishedDigest fingerprints a finished run's status by what can still change for it: its count,
// its finish, its checklist's states, a snooze, and a source other than its servers failing. Free
// space, a health check's milliseconds and a disk's fill time still move after the finish; a status
// fingerprinted with them was posted again every hour, the same "Done" each time.
func finishedDigest(rs reports.RunStatus) string {
	h := sha256.New()
	fmt.Fprintf(h, "finished\x00%s\x00", rs.Name)
	if p := rs.Progress; p != nil {
		fmt.Fprintf(h, "%d/%d/%d\x00", p.Done, p.Total, p.Errors)
	}
	if f := rs.Finish; f != nil {
		fmt.Fprintf(h, "%g\x00", f.FinishedAt)
	}
	for _, st := range rs.Stages {
		fmt.Fprintf(h, "stage %s=%s\x00", st.Name, st.State)
	}
	fmt.Fprintf(h, "snoozed %t\x00", rs.Snoozed != nil)
	for _, p := range rs.Problems {
		if !rs.ServerRetired(p.Probe) {
			fmt.Fprintf(h, "problem %s\x00", p.Probe)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// statusDigest fingerprints a status without its "as of" line, so an unchanged status is
// recognised.
func statusDigest(m reports.Message) string {
	h := sha256.New()
	h.Write([]byte(m.Title + "\x00"))
	for _, s := range m.Sections {
		h.Write([]byte(s + "\x00"))
	}
	for _, c := range m.Context {
		if strings.HasPrefix(c, "as of ") {
			continue
		}
		h.Write([]byte(c + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}
