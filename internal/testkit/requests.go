package testkit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Sign signs a request body the way Slack does: v0=HMAC-SHA256(secret, "v0:<ts>:<body>").
// The Slack transport's TestSlackSigningExample checks it against Slack's published example, so
// requests it signs are requests Slack would send.
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:", ts)
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// SlashBody is a slash-command form like Slack's.
func SlashBody(command, text, channel, user, responseURL string) []byte {
	v := url.Values{"command": {command}, "text": {text}, "channel_id": {channel}, "channel_name": {strings.ToLower(channel)},
		"user_id": {user}, "team_id": {"T111"}, "response_url": {responseURL}, "trigger_id": {"1.2.3"}}
	return []byte(v.Encode())
}

// MentionEvent is an Events API app_mention callback.
func MentionEvent(eventID, text, user, channel, ts, threadTS string) []byte {
	ev := map[string]any{"type": "app_mention", "text": text, "user": user, "channel": channel, "ts": ts, "event_ts": ts}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	b, _ := json.Marshal(map[string]any{"token": "x", "team_id": "T111", "api_app_id": "A111", "type": "event_callback",
		"event_id": eventID, "event_time": 1700000000, "event": ev})
	return b
}
