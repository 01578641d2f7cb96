package posts

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"runwatch/reports"
	"runwatch/state"
)

// This file is "I'm on it": who took which warning, the reminder that re-arms while the warning
// is not resolved, and the open-warnings list the App Home shows. The sampler's goroutine owns the
// alerter; presses arrive on others, so what they share lives here, behind a mutex.

const claimsStateFile = "claims.json"

// minRemind is the shortest reminder interval, whatever a kind's cooldown.
const minRemind = 15 * time.Minute

// Claim is a warning someone said they are on.
type Claim struct {
	User     string    `json:"user"`
	At       time.Time `json:"at"`
	RemindAt time.Time `json:"remind_at"` // the next reminder, if the warning is still open then
}

// OpenWarning is a warning that was posted and has not cleared, as of the last sample.
type OpenWarning struct {
	Key, Run, Kind, Summary string
	Since                   time.Time
	Ref                     string // the warning's message ts
	Channel                 string
}

// Claims is the shared memory of "I'm on it" and the open warnings.
type Claims struct {
	mu     sync.Mutex
	claims map[string]Claim
	open   []OpenWarning
	dir    *state.Dir
	log    *slog.Logger
}

// NewClaims loads the claims from dir (nil: memory only).
func NewClaims(dir *state.Dir, log *slog.Logger) *Claims {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Claims{claims: map[string]Claim{}, dir: dir, log: log}
	if dir != nil {
		var m map[string]Claim
		err := dir.Load(claimsStateFile, &m)
		switch {
		case err == nil && m != nil:
			c.claims = m
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			log.Warn("claimed warnings not restored", "err", err)
		}
	}
	return c
}

// save writes the claims; the caller holds mu.
func (c *Claims) save() error {
	if c.dir == nil {
		return nil
	}
	return c.dir.Save(claimsStateFile, c.claims)
}

// Take records that user is on the warning key from now; the first reminder comes after remind.
func (c *Claims) Take(key, user string, now time.Time, remind time.Duration) (Claim, error) {
	if c == nil {
		return Claim{}, errors.New("warnings are not tracked here")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.claims[key]; ok {
		return cl, nil // first come: a second press does not steal it
	}
	cl := Claim{User: user, At: now.UTC(), RemindAt: now.Add(max(remind, minRemind)).UTC()}
	c.claims[key] = cl
	return cl, c.save()
}

// Get returns the claim on key.
func (c *Claims) Get(key string) (Claim, bool) {
	if c == nil {
		return Claim{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.claims[key]
	return cl, ok
}

// Open returns the open warnings of run ("" for all) as of the last sample.
func (c *Claims) Open(run string) []OpenWarning {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []OpenWarning
	for _, w := range c.open {
		if run == "" || w.Run == run {
			out = append(out, w)
		}
	}
	return out
}

// Warning returns the open warning with key, as of the last sample.
func (c *Claims) Warning(key string) (OpenWarning, bool) {
	for _, w := range c.Open("") {
		if w.Key == key {
			return w, true
		}
	}
	return OpenWarning{}, false
}

// Apply runs on the sampler's goroutine after the alerter's Process: it keeps the claims in step
// with the alert state and shapes the posts. A claimed warning is not repeated (its owner gets the
// reminder instead), a reminder is due when its time has come and re-arms for another interval,
// and a warning's "resolved" follow-up names who took it, which ends the claim.
func (c *Claims) Apply(a *Alerter, posts []Post, now time.Time, snoozed func(run string) bool) []Post {
	st, loc := a.State, a.loc
	cooldown := func(kind string) time.Duration { return max(a.Policy.Cooldown[kind], minRemind) }
	channel := func(run string) string {
		if a.Channel == nil {
			return ""
		}
		return a.Channel(run)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	out := posts[:0]
	over := map[string]bool{} // claims whose warning resolved: ended once every post about it named them
	for _, p := range posts {
		cl, claimed := c.claims[p.Key]
		switch {
		case claimed && (strings.HasSuffix(p.Kind, "_resolved") || strings.HasSuffix(p.Kind, "_expired")):
			p.Message.Sections = append(p.Message.Sections, fmt.Sprintf("<@%s> was on it since %s.", cl.User, reports.SlackTime(cl.At, loc)))
			over[p.Key] = true
		case claimed && p.Edit != "":
			// The warning's message shown open again (or flapping): who is on it, and no "I'm on it" button.
			p.Owner = cl.User
			p.Message.Context = append(p.Message.Context, fmt.Sprintf(":eyes: <@%s> is on it since %s", cl.User, reports.SlackTime(cl.At, loc)))
		case claimed && p.ThreadRef != "":
			continue // the reminder below speaks for it
		}
		out = append(out, p)
	}
	for k := range over {
		delete(c.claims, k)
		changed = true
	}
	c.open = c.open[:0]
	keys := make([]string, 0, len(st.Active))
	for k := range st.Active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	live := map[string]bool{}
	for _, k := range keys {
		al := st.Active[k]
		if (al.Cleared && !al.Flapping) || al.Posted.IsZero() {
			continue // a flapping warning is open while it flaps, up or down
		}
		live[k] = true
		c.open = append(c.open, OpenWarning{Key: k, Run: al.Run, Kind: al.Kind, Summary: al.Summary, Since: al.Since, Ref: al.Ref, Channel: channel(al.Run)})
		cl, ok := c.claims[k]
		if !ok || now.Before(cl.RemindAt) || snoozed(al.Run) || al.Ref == "" {
			continue
		}
		out = append(out, Post{Run: al.Run, Channel: channel(al.Run), Kind: al.Kind + "_reminder", Key: k, ThreadRef: al.Ref, Message: reports.Message{Sections: []string{
			fmt.Sprintf(":bell: <@%s>, this is still not resolved: %s (since %s; you took it at %s). I'll remind you again in %s unless it clears.",
				cl.User, reports.Esc(al.Summary), reports.SlackTime(al.Since, loc), reports.SlackTime(cl.At, loc),
				reports.Duration(cooldown(al.Kind).Seconds()))}}})
		cl.RemindAt = now.Add(cooldown(al.Kind)).UTC()
		c.claims[k] = cl
		changed = true
	}
	for k := range c.claims {
		if !live[k] {
			delete(c.claims, k) // the warning went away (or never was): nothing to be on any more
			changed = true
		}
	}
	if changed {
		if err := c.save(); err != nil {
			c.log.Warn("claimed warnings not saved", "err", err)
		}
	}
	return out
}

// undelivered re-arms a reminder that could not be posted (each one a burst of them covers), for the next
// sample.
func (c *Claims) undelivered(p Post, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range append([]string{p.Key}, p.Covers...) {
		if cl, ok := c.claims[k]; ok {
			cl.RemindAt = now.UTC()
			c.claims[k] = cl
		}
	}
}
