package slackapp

import (
	"context"
	"strings"
	"sync"
	"time"

	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/posts"
)

// Deliver posts the sampler's warnings to their run's channel, follow-ups in the warning's
// thread with a link to it (sent to the channel too when the post says so), and edits a warning's own
// message in place (chat.update) when the post is an edit; a failed post returns its error so the alerter
// tries again on the next tick. Each post carries its intent ID as message metadata (see Find). One post,
// its tries included, may take timeout (posts.DeliverTimeout when zero).
func Deliver(b *conversation.Bot, api *API, metrics *botmetrics.Metrics, timeout time.Duration) func(ctx context.Context, p posts.Post) (string, error) {
	links := &permalinks{}
	return func(ctx context.Context, p posts.Post) (string, error) {
		if p.Channel == "" {
			return "", nil // nowhere to post; logged at start
		}
		if r, ok := b.Monitor().Config().RunByName(p.Run); !ok || !b.PostAllowed(r, p.Channel) {
			return "", nil // a channel the allow-lists do not admit; logged at start
		}
		if timeout <= 0 {
			timeout = posts.DeliverTimeout
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		channel := b.ChannelID(p.Channel)
		if p.Edit != "" {
			if posts.IsWarning(p.Kind) {
				p.Message.Controls = b.WarningControls(p.Run, p.Key, p.Owner) // open again: its buttons back
			}
			// A warning's own message, or a correction, replaces the post where it stands.
			err := api.Update(ctx, channel, p.Edit, p.Message)
			metrics.Posted(p.Kind+"_edit", err)
			return p.Edit, err
		}
		if p.ThreadRef == "" && posts.IsWarning(p.Kind) {
			p.Message.Controls = b.WarningControls(p.Run, p.Key, "")
		}
		if line := mentionLine(p.Mentions); line != "" {
			// First, so that the notification (the text beside the blocks) starts with whom it pages.
			p.Message.Sections = append([]string{line}, p.Message.Sections...)
		}
		if p.ThreadRef != "" {
			if link := links.get(ctx, api, channel, p.ThreadRef); link != "" {
				p.Message.Context = append(p.Message.Context, "<"+link+"|↑ the first warning>")
			}
		}
		ch, ts, err := api.postTagged(ctx, channel, p.ThreadRef, p.ID, p.Broadcast && p.ThreadRef != "", p.Message)
		metrics.Posted(p.Kind, err)
		if err == nil {
			b.LearnChannel(p.Channel, ch)
		}
		return ts, err
	}
}

// mentionLine is Slack's mrkdwn for whom a post pages: <@U…> for a user, <!subteam^S…> for a user group,
// <!here> and <!channel>; "" for nobody.
func mentionLine(ms []string) string {
	var out []string
	for _, m := range ms {
		switch {
		case m == "@here":
			out = append(out, "<!here>")
		case m == "@channel":
			out = append(out, "<!channel>")
		case strings.HasPrefix(m, "S"):
			out = append(out, "<!subteam^"+m+">")
		case strings.HasPrefix(m, "U"), strings.HasPrefix(m, "W"):
			out = append(out, "<@"+m+">")
		}
	}
	return strings.Join(out, " ")
}

// Find asks Slack whether a post a crash interrupted landed: a message with its intent ID in
// its metadata, in the channel's history (or the thread's replies).
func Find(b *conversation.Bot, api *API) func(ctx context.Context, pp posts.PendingPost) (string, error) {
	return func(ctx context.Context, pp posts.PendingPost) (string, error) {
		if pp.Post.Channel == "" || pp.Post.ID == "" {
			return "", nil
		}
		return api.FindTagged(ctx, b.ChannelID(pp.Post.Channel), pp.Post.ThreadRef, pp.Post.ID, pp.At)
	}
}

// permalinks caches the permalinks of the warnings follow-ups link to: one chat.getPermalink per
// thread, not per follow-up.
type permalinks struct {
	mu    sync.Mutex
	links map[string]string
}

func (p *permalinks) get(ctx context.Context, api *API, channel, ts string) string {
	key := channel + "/" + ts
	p.mu.Lock()
	link, ok := p.links[key]
	p.mu.Unlock()
	if ok {
		return link
	}
	link, err := api.Permalink(ctx, channel, ts)
	if err != nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.links == nil || len(p.links) > 1024 {
		p.links = map[string]string{}
	}
	p.links[key] = link
	return link
}
