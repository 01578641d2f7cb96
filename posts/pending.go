package posts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// pendingGiveUp is how long a crash-interrupted post is looked up before it is delivered again
// anyway: a Slack that cannot say whether the post landed for this long is more likely to have
// lost it than to show it later.
const pendingGiveUp = 10 * time.Minute

// DeliverTimeout bounds one delivery of a post (its tries included) unless the bot is told otherwise
// (RUNWATCH_POST_TIMEOUT): the transport gives up on it after this long. Until then Slack may still be
// taking it, so a crash-interrupted post is not looked up sooner.
const DeliverTimeout = 30 * time.Second

// lookUpAfter is how long after a post's intent was recorded it may be looked up: the timeout its call had
// (recorded with the intent; DeliverTimeout for intents saved before it was) and a margin.
func lookUpAfter(callTimeout time.Duration) time.Duration {
	if callTimeout <= 0 {
		callTimeout = DeliverTimeout
	}
	return callTimeout + settleMargin
}

// settleMargin is added to a call's timeout before its post is looked up: Slack may finish a post a moment
// after the caller gave up on it.
const settleMargin = 5 * time.Second

// recordIntents gives each post an ID and saves it as pending before anything is sent: the state
// file is written atomically, so after a kill -9 mid-post the restarted bot knows a post may have
// landed and asks Slack (Find) instead of posting a second copy.
func (s *Sampler) recordIntents(posts []Post, now time.Time) {
	if s.Alerter.State.Pending == nil {
		s.Alerter.State.Pending = map[string]PendingPost{}
	}
	for i := range posts {
		if posts[i].ID == "" {
			posts[i].ID = newPostID()
		}
		s.Alerter.State.Pending[posts[i].ID] = PendingPost{Post: posts[i], At: now, Timeout: s.postTimeout()}
	}
	if s.State != nil {
		if err := s.State.Save(alertStateFile, s.Alerter.State); err != nil {
			s.log.Warn("intent to post not saved: a crash mid-post may post a warning twice", "err", err)
		}
	}
}

// recoverPending settles posts a crash interrupted: one Slack has is recorded as delivered; a
// warning Slack does not have is marked undelivered, so this tick's evaluation decides afresh
// whether it is still news; a follow-up Slack does not have is returned to be delivered again,
// under its first ID. A post Slack cannot be asked about stays pending until pendingGiveUp. A post is
// not looked up before its call's timeout (PostTimeout, as recorded with it) has passed since it was recorded: until then
// Slack may still be taking it, and would say it has no such post.
func (s *Sampler) recoverPending(ctx context.Context, now time.Time) []Post {
	var redo []Post
	for id, pp := range s.Alerter.State.Pending {
		if now.Sub(pp.At) < lookUpAfter(pp.Timeout) {
			// The call may still be under way at Slack (a slow Slack takes seconds to answer, and only then
			// is the message in the channel): asked now, Slack would say it has no such post.
			continue
		}
		ref := ""
		if s.Find != nil {
			c, cancel := context.WithTimeout(ctx, s.postTimeout()) // a look-up is a Slack call like the post
			r, err := s.Find(c, pp)
			cancel()
			if err != nil && now.Sub(pp.At) < pendingGiveUp {
				s.log.Warn("cannot tell whether a post interrupted by a restart landed; asking again next sample", "run", pp.Post.Run, "kind", pp.Post.Kind, "err", err)
				continue
			}
			ref = r
		}
		delete(s.Alerter.State.Pending, id)
		switch {
		case ref != "":
			s.log.Info("a post interrupted by a restart had landed; not posting it again", "run", pp.Post.Run, "kind", pp.Post.Kind)
			s.Alerter.Delivered(pp.Post, ref)
		case pp.Post.followsUp():
			redo = append(redo, pp.Post)
		default:
			s.Alerter.Undelivered(pp.Post)
		}
	}
	return redo
}

func newPostID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
