package slackapp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/slack-go/slack"

	"runwatch/posts"
)

// This file is the one place a failed Slack call is classified (alertmanager's Retrier.Check is the
// model): whether another try may succeed and when, whether the call may have reached Slack before it
// failed, whether Slack itself refused it, a message that cannot be edited any more, blocks Slack will
// not draw, a token it rejected. The retry loop, the posts that must not land twice, the charts'
// fallback, the scheduler (through the errors posts declares) and the start-up check all read it.

// failure is what a failed call's error says.
type failure struct {
	retry  bool          // another try may succeed
	wait   time.Duration // how long Slack asked to wait before it (0: use the backoff)
	reason string        // why a retry is worth it: rate_limited, server_error, network
	// landed: the call may have reached Slack after all (the connection broke or timed out once the
	// request was sent), so it is not simply made again. A connection refused never reached it; Go's
	// transport already retries a request on a kept-alive connection the server had closed.
	landed bool
	// refused: Slack answered, and said no (an error code); asking again will not change that.
	refused bool
	// gone: chat.update failed because the message cannot be edited any more (deleted, too old, its
	// channel gone or archived).
	gone bool
	// charts: Slack refused the message because of its blocks, as a workspace or client without
	// data_visualization does (invalid_blocks; a response_url says 400).
	charts bool
	// rejected is the error code when Slack rejected the token itself ("" otherwise).
	rejected string
	// status is the HTTP status Slack answered with, when that is the error (0 otherwise).
	status int
}

// tokenCodes are Slack's errors for a token it will not take.
var tokenCodes = map[string]bool{"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "not_allowed_token_type": true}

// classify reads err, an error of the SDK's (or one of this package's wrapping it).
func classify(err error) failure {
	var f failure
	if err == nil {
		return f
	}
	f.retry, f.wait, f.reason = retryable(err)
	f.landed = mayHaveLanded(err)
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok {
		f.status = sc.Code
		f.charts = sc.Code == http.StatusBadRequest
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		f.refused = true
		switch se.Err {
		case "message_not_found", "cant_update_message", "edit_window_closed", "channel_not_found", "is_archived":
			f.gone = true
		}
		f.charts = se.Err == "invalid_blocks" || se.Err == "invalid_blocks_format"
		if tokenCodes[se.Err] {
			f.rejected = se.Err
		}
	}
	// Socket Mode's connection says a refused token in an error of its own, whose text is the code.
	if f.rejected == "" && tokenCodes[err.Error()] {
		f.rejected = err.Error()
	}
	return f
}

// retryable is whether another try may succeed, and how long Slack asked us to wait (0: use the
// backoff).
func retryable(err error) (retry bool, wait time.Duration, reason string) {
	if _, ok := errors.AsType[noRetry](err); ok {
		return false, 0, ""
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, 0, ""
	}
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
		return true, max(rl.RetryAfter, time.Second), "rate_limited"
	}
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok {
		if sc.Code >= 500 {
			return true, 0, "server_error"
		}
		if sc.Code == http.StatusTooManyRequests {
			return true, time.Second, "rate_limited"
		}
		return false, 0, ""
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return true, 0, "server_error"
		case "ratelimited", "rate_limited":
			return true, time.Second, "rate_limited"
		}
		return false, 0, ""
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true, 0, "network"
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true, 0, "network"
	}
	return false, 0, ""
}

// mayHaveLanded is failure.landed.
func mayHaveLanded(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// noRetry marks an error the retry loop must not try again.
type noRetry struct{ err error }

func (e noRetry) Error() string { return e.err.Error() }
func (e noRetry) Unwrap() error { return e.err }

// kinds are the errors a Error is besides the SDK's, for callers that do not read Slack's:
// the posts' ErrGone, ErrRefused and ErrChartsRefused.
func (f failure) kinds() []error {
	var out []error
	if f.gone {
		out = append(out, posts.ErrGone)
	}
	if f.refused {
		out = append(out, posts.ErrRefused)
	}
	if f.charts {
		out = append(out, posts.ErrChartsRefused)
	}
	return out
}

// TokenRejected says whether err is Slack refusing the token itself, and its error code.
func TokenRejected(err error) (code string, ok bool) {
	code = classify(err).rejected
	return code, code != ""
}
