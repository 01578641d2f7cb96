package conversation

import "runwatch/reports"

// This file is who made a change: every change an answer or a message shows says who made it, as a
// mention (<@U…>), not a raw id: the commands' answers, a warning's state line after a button press.

// whoAsked is the person behind a request as a mention, or "" where there is no one to name (the console,
// bot ask: whoever typed it reads the answer).
func whoAsked(req Request) string {
	if req.User == "" || req.Terminal() {
		return ""
	}
	return reports.Who(req.User)
}

// changedBy records who snoozed run (a request without a user: nobody, or the snooze ended). It is kept
// in memory: after a restart a snooze says until when, not who.
func (b *Bot) changedBy(run string, req Request) {
	b.channelMu.Lock()
	defer b.channelMu.Unlock()
	if b.snoozers == nil {
		b.snoozers = map[string]string{}
	}
	if req.User == "" || req.Terminal() {
		delete(b.snoozers, run)
		return
	}
	b.snoozers[run] = req.User
}

// SnoozedBy is who snoozed run's warnings, as a mention ("" when not known).
func (b *Bot) SnoozedBy(run string) string {
	b.channelMu.RLock()
	defer b.channelMu.RUnlock()
	if u := b.snoozers[run]; u != "" {
		return reports.Who(u)
	}
	return ""
}
