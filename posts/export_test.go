package posts

import (
	"time"
)

// The posts' tests are in package posts_test, so that they can drive the posts through the Slack
// transport, which imports posts. These are the internals they look at.

const (
	AlertStateFile    = alertStateFile
	ScheduleStateFile = scheduleStateFile
	LostKind          = lostKind
	BurstList         = burstList
)

var (
	CoalesceWith  = coalesce
	BurstWindow   = burstWindow
	RecoveredText = recoveredText
	StatusDigest  = statusDigest
)

// LostNote is the note a sampler whose alert memory was lost posts in place of ps.
func LostNote(a *Alerter, ps []Post) []Post { return newLostAlerts(a.Policy).gather(a, ps) }

func (c *Claims) Undelivered(p Post, now time.Time) { c.undelivered(p, now) }

func (a *Alerter) CoalesceBursts(ps []Post, now time.Time, window time.Duration) []Post {
	return a.coalesceBursts(ps, now, window)
}
