package slackapp

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"runwatch/reports"
)

// postMetadataType is the event_type of the message metadata runwatch puts on its warnings; the
// payload's "id" is the post's intent id (see Sampler), so after a crash the bot can ask Slack
// whether a post landed before posting it again.
const postMetadataType = "runwatch_post"

// PostTagged is Post with message metadata carrying id (none when id is ""). A post can fail after
// Slack took it (the connection reset, the answer timed out): such a try is not simply made again,
// which would post a second copy. With an id, Slack is asked first whether the message is there
// (and it is, the post succeeded); without one, or when Slack cannot say, the error is returned.
func (a *API) PostTagged(ctx context.Context, channel, threadTS, id string, m reports.Message) (string, string, error) {
	return a.postTagged(ctx, channel, threadTS, id, false, m)
}

// postTagged is PostTagged; broadcast sends a reply in a thread to the channel too (reply_broadcast).
func (a *API) postTagged(ctx context.Context, channel, threadTS, id string, broadcast bool, m reports.Message) (string, string, error) {
	if err := a.gate.check(channel); err != nil {
		return "", "", err // the channel refused the last post, and was said to: not yet again
	}
	opts := msgOptions(m)
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
		if broadcast {
			opts = append(opts, slack.MsgOptionBroadcast())
		}
	}
	if id != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: postMetadataType, EventPayload: map[string]any{"id": id}}))
	}
	var ch, ts string
	var maybeLanded error // the last try's error, when that try may have reached Slack
	since := time.Now()
	err := a.call(ctx, "chat.postMessage", func(ctx context.Context) error {
		if maybeLanded != nil {
			found, err := a.FindTagged(ctx, channel, threadTS, id, since)
			if err != nil {
				return noRetry{fmt.Errorf("%w (it may have been posted, and looking it up failed: %v)", maybeLanded, err)}
			}
			if found != "" {
				ch, ts = channel, found
				return nil
			}
		}
		var err error
		ch, ts, err = a.client.PostMessageContext(ctx, channel, opts...)
		if err != nil && classify(err).landed {
			if id == "" {
				return noRetry{fmt.Errorf("%w (it may have been posted: not posting it again)", err)}
			}
			maybeLanded = err
		}
		return err
	})
	a.gate.result(channel, err)
	return ch, ts, err
}

// findTaggedPages bounds the history read while looking for a tagged post: the post was made
// moments before a crash, so it is among the newest messages.
const findTaggedPages = 3

// FindTagged looks for a message runwatch posted with metadata id in channel (in the thread of
// threadTS when set) since the given time, through conversations.history or conversations.replies
// (scopes channels:history, groups:history). It returns the message's ts, or "" when Slack has no
// such message.
func (a *API) FindTagged(ctx context.Context, channel, threadTS, id string, since time.Time) (string, error) {
	oldest := strconv.FormatFloat(float64(since.Add(-time.Minute).UnixMilli())/1000, 'f', 6, 64)
	cursor := ""
	for range findTaggedPages {
		var msgs []slack.Message
		var more bool
		err := a.call(ctx, "conversations.history", func(ctx context.Context) error {
			if threadTS != "" {
				m, hasMore, next, err := a.client.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
					ChannelID: channel, Timestamp: threadTS, Oldest: oldest, Cursor: cursor, Limit: 200, IncludeAllMetadata: true})
				msgs, more, cursor = m, hasMore, next
				return err
			}
			r, err := a.client.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: oldest, Cursor: cursor, Limit: 200, IncludeAllMetadata: true})
			if err != nil {
				return err
			}
			msgs, more, cursor = r.Messages, r.HasMore, r.ResponseMetaData.NextCursor
			return nil
		})
		if err != nil {
			return "", err
		}
		for _, m := range msgs {
			if m.Metadata.EventType == postMetadataType && m.Metadata.EventPayload["id"] == id {
				return m.Timestamp, nil
			}
		}
		if !more || cursor == "" {
			break
		}
	}
	return "", nil
}

// Permalink returns a message's permalink (chat.getPermalink).
func (a *API) Permalink(ctx context.Context, channel, ts string) (string, error) {
	var link string
	err := a.call(ctx, "chat.getPermalink", func(ctx context.Context) error {
		var err error
		link, err = a.client.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: channel, Ts: ts})
		return err
	})
	return link, err
}
