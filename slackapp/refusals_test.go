package slackapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"runwatch/posts"
)

func TestClassifyRetry(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		retry bool
		wait  time.Duration
	}{
		{"429 with Retry-After", &slack.RateLimitedError{RetryAfter: 7 * time.Second}, true, 7 * time.Second},
		{"429 with Retry-After 0", &slack.RateLimitedError{}, true, time.Second},
		{"503", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, true, 0},
		{"404", slack.StatusCodeError{Code: 404, Status: "404 Not Found"}, false, 0},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, true, 0},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, false, 0},
		{"invalid_auth", fmt.Errorf("post: %w", slack.SlackErrorResponse{Err: "invalid_auth"}), false, 0},
		{"connection refused", &url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true, 0},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, 0},
		{"canceled", context.Canceled, false, 0},
		{"deadline", &url.Error{Op: "Post", URL: "x", Err: context.DeadlineExceeded}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := classify(tc.err)
			if f.retry != tc.retry || f.wait != tc.wait {
				t.Errorf("classify(%v) = retry %v, wait %v; want %v, %v", tc.err, f.retry, f.wait, tc.retry, tc.wait)
			}
		})
	}
}

func TestClassifyRefusals(t *testing.T) {
	tests := []struct {
		name                          string
		err                           error
		landed, refused, gone, charts bool
		rejected                      string
	}{
		{"message deleted", slack.SlackErrorResponse{Err: "message_not_found"}, false, true, true, false, ""},
		{"edit window closed", fmt.Errorf("update: %w", slack.SlackErrorResponse{Err: "edit_window_closed"}), false, true, true, false, ""},
		{"no charts here", slack.SlackErrorResponse{Err: "invalid_blocks"}, false, true, false, true, ""},
		{"response_url refuses the blocks", slack.StatusCodeError{Code: 400, Status: "400 Bad Request"}, false, false, false, true, ""},
		{"channel_not_found is gone", slack.SlackErrorResponse{Err: "channel_not_found"}, false, true, true, false, ""},
		{"not_in_channel is refused", slack.SlackErrorResponse{Err: "not_in_channel"}, false, true, false, false, ""},
		{"bot token revoked", fmt.Errorf("auth.test: %w", slack.SlackErrorResponse{Err: "token_revoked"}), false, true, false, false, "token_revoked"},
		{"socket mode's rejection", errors.New("invalid_auth"), false, false, false, false, "invalid_auth"},
		{"connection reset", &url.Error{Op: "Post", URL: "x", Err: syscall.ECONNRESET}, true, false, false, false, ""},
		{"connection refused", &url.Error{Op: "Post", URL: "x", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, false, false, false, false, ""},
		{"deadline", context.DeadlineExceeded, true, false, false, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := classify(tc.err)
			if f.landed != tc.landed || f.refused != tc.refused || f.gone != tc.gone || f.charts != tc.charts || f.rejected != tc.rejected {
				t.Errorf("classify(%v) = landed %v refused %v gone %v charts %v rejected %q; want %v %v %v %v %q", tc.err,
					f.landed, f.refused, f.gone, f.charts, f.rejected, tc.landed, tc.refused, tc.gone, tc.charts, tc.rejected)
			}
			// What the scheduler sees of it: the errors posts declares, through a Error.
			se := &Error{Method: "chat.update", msg: "x", err: tc.err, kinds: f.kinds()}
			if errors.Is(se, posts.ErrGone) != tc.gone || errors.Is(se, posts.ErrRefused) != tc.refused || errors.Is(se, posts.ErrChartsRefused) != tc.charts {
				t.Errorf("Error of %v: Is(ErrGone) %v, Is(ErrRefused) %v, Is(ErrChartsRefused) %v; want %v, %v, %v", tc.err,
					errors.Is(se, posts.ErrGone), errors.Is(se, posts.ErrRefused), errors.Is(se, posts.ErrChartsRefused), tc.gone, tc.refused, tc.charts)
			}
			if _, ok := errors.AsType[slack.SlackErrorResponse](se); ok != tc.refused {
				t.Errorf("Error of %v hides the SDK's error from errors.As", tc.err)
			}
		})
	}
}
