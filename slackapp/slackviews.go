package slackapp

import (
	"context"

	"github.com/slack-go/slack"

	"runwatch/conversation"
	"runwatch/reports"
)

// This file holds the Web API calls of buttons and the App Home: editing a message from its own
// blocks, publishing a Home tab. Like every call they go through API.call (retries, redaction).

// UpdateBlocks edits a message in place with blocks as they are (a warning whose buttons changed).
func (a *API) UpdateBlocks(ctx context.Context, channel, ts, text string, blocks []slack.Block) error {
	return a.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := a.client.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(reports.TruncateRunes(text, 3000), false),
			slack.MsgOptionBlocks(blocks...))
		return err
	})
}

// ReplaceOriginal edits the message an interaction came from through its response_url: the way to
// change an ephemeral message, which chat.update cannot reach.
func (a *API) ReplaceOriginal(ctx context.Context, responseURL, text string, blocks []slack.Block) error {
	msg := &slack.WebhookMessage{Text: reports.TruncateRunes(text, 3000), Blocks: &slack.Blocks{BlockSet: blocks}, ReplaceOriginal: true}
	return a.postResponseURL(ctx, responseURL, msg)
}

// PublishHome publishes a user's App Home tab. metadata comes back with presses on it (the user's
// DM channel with the bot, where answers to those presses go).
func (a *API) PublishHome(ctx context.Context, user, metadata string, blocks []slack.Block) error {
	return a.call(ctx, "views.publish", func(ctx context.Context) error {
		_, err := a.client.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: slack.HomeTabViewRequest{
			Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}, PrivateMetadata: metadata, CallbackID: "runwatch_home"}})
		return err
	})
}

// charted sends rep's message with send; where Slack refuses its charts, it sends the message
// again without them and uploads the reply's PNG chart (in channel, thread) instead.
func (s *App) charted(ctx context.Context, rep conversation.Reply, channel, thread string, send func(m reports.Message) error) error {
	err := send(rep.Message)
	if err == nil || len(rep.Message.Charts) == 0 || !classify(err).charts {
		return err
	}
	s.log.Info("Slack refused the chart blocks; sending without them, with the chart as a PNG", "err", err)
	m := rep.Message
	m.Charts = nil
	if err = send(m); err == nil && rep.Fallback != nil {
		s.upload(ctx, channel, thread, *rep.Fallback)
	}
	return err
}
