package slackapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"runwatch/internal/testkit"
	"runwatch/reports"
)

// brokenSlack is a Web API whose first post of each kind breaks the connection instead of
// answering: after taking the message (landed) or before (lost). conversations.history answers
// from the messages it took.
type brokenSlack struct {
	landed bool

	mu     sync.Mutex
	broken map[string]bool // methods whose first call has broken
	taken  []map[string]any
	calls  []string
}

func (b *brokenSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	b.mu.Lock()
	b.calls = append(b.calls, method)
	first := !b.broken[method] && method != "conversations.history"
	if first {
		b.broken[method] = true
	}
	if method == "chat.postMessage" && (!first || b.landed) {
		m := map[string]any{"type": "message", "ts": fmt.Sprintf("1700000000.%06d", len(b.taken)+1), "text": r.PostForm.Get("text")}
		var md map[string]any
		if json.Unmarshal([]byte(r.PostForm.Get("metadata")), &md) == nil {
			m["metadata"] = md
		}
		b.taken = append(b.taken, m)
	}
	taken, _ := json.Marshal(b.taken)
	n := len(b.taken)
	b.mu.Unlock()
	if first {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "chat.postMessage":
		fmt.Fprintf(w, `{"ok":true,"channel":"C1","ts":"1700000000.%06d"}`, n)
	case "conversations.history":
		fmt.Fprintf(w, `{"ok":true,"messages":%s,"has_more":false}`, taken)
	default:
		fmt.Fprint(w, `{"ok":true,"message_ts":"1700000000.000001"}`)
	}
}

// messages is how many posts the channel holds.
func (b *brokenSlack) messages() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.taken)
}

func (b *brokenSlack) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		if c == method {
			n++
		}
	}
	return n
}

// TestPostNotRepeatedWhenItMayHaveLanded breaks the connection of a post after Slack took it, or
// before: a tagged post (a warning, a status) is looked up before it is tried again, so it lands
// once either way and says where; an untagged one (an answer, an ephemeral) is not tried again.
func TestPostNotRepeatedWhenItMayHaveLanded(t *testing.T) {
	msg := reports.Message{Sections: []string{"hello"}}
	for _, tc := range []struct {
		name     string
		landed   bool
		call     func(a *API) (string, error)
		method   string
		messages int  // in the channel afterwards
		ok       bool // the call reports success
	}{
		{"tagged, landed", true, func(a *API) (string, error) {
			_, ts, err := a.PostTagged(context.Background(), "C1", "", "intent-1", msg)
			return ts, err
		}, "chat.postMessage", 1, true},
		{"tagged, lost", false, func(a *API) (string, error) {
			_, ts, err := a.PostTagged(context.Background(), "C1", "", "intent-1", msg)
			return ts, err
		}, "chat.postMessage", 1, true},
		{"untagged, landed", true, func(a *API) (string, error) {
			_, ts, err := a.Post(context.Background(), "C1", "", msg)
			return ts, err
		}, "chat.postMessage", 1, false},
		{"ephemeral", true, func(a *API) (string, error) {
			return "", a.Ephemeral(context.Background(), "C1", "U1", "", msg)
		}, "chat.postEphemeral", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &brokenSlack{landed: tc.landed, broken: map[string]bool{}}
			srv := httptest.NewServer(b)
			defer srv.Close()
			api := NewAPI(APIOptions{Token: testkit.BotToken, APIURL: srv.URL + "/api/"})
			api.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
			ts, err := tc.call(api)
			if (err == nil) != tc.ok {
				t.Fatalf("%s = %q, %v; want ok %v", tc.name, ts, err, tc.ok)
			}
			if tc.ok && ts != "1700000000.000001" {
				t.Errorf("%s = ts %q; want the one message's 1700000000.000001", tc.name, ts)
			}
			if n := b.messages(); n != tc.messages {
				t.Errorf("%s: %d messages in the channel; want %d", tc.name, n, tc.messages)
			}
			if n := b.count(tc.method); !tc.ok && n != 1 {
				t.Errorf("%s: %d calls of %s; want 1 (not tried again)", tc.name, n, tc.method)
			}
		})
	}
}
