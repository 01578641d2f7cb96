package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/botmetrics"
	"runwatch/internal/redact"
	"runwatch/monitor"
	"runwatch/posts"
	"runwatch/probes"
	"runwatch/slackapp"
	"runwatch/state"
)

// ServeOptions are what `bot serve` needs beyond the bot.
type ServeOptions struct {
	Env         config.Env
	Log         *slog.Logger
	SampleEvery time.Duration
	Out         io.Writer
	// Listener, when set, serves HTTP mode on it instead of listening on RUNWATCH_HTTP_ADDR (tests
	// listen on 127.0.0.1:0).
	Listener net.Listener
	// HTTP is the client for Slack's API; nil gets one with a 30 s timeout.
	HTTP *http.Client
	// InlineBudget is how long a slash command may take before it is acknowledged and answered
	// through its response_url (default 2 s; Slack allows 3 s).
	InlineBudget time.Duration
	// ReadOnly, when set, says why this serve only answers (another process holds the state directory):
	// no sampler, no warnings, no scheduled posts. The bot's monitor is read-only too, so snoozes and stage
	// marks are refused. Of the state directory it writes only the Slack requests it has seen (the console
	// holding the directory never does): kept in memory alone, the full serve that takes over would answer a
	// redelivered request twice, and take a request replayed within its window.
	ReadOnly string
	// DutyClock is the clock of the duty messages (which instance of the app answers: slackapp.Duty); nil
	// is the wall clock. Tests step it.
	DutyClock slackapp.Clock
}

// ErrNoTransport says serve has no way to talk to Slack.
var ErrNoTransport = errors.New("no Slack connection configured: set SLACK_APP_TOKEN and SLACK_BOT_TOKEN (Socket Mode), " +
	"or RUNWATCH_HTTP_ADDR and SLACK_SIGNING_SECRET (HTTP mode); without Slack, use `bot console`")

// slackModes says which transports the environment asks for.
type slackModes struct {
	socket bool // Socket Mode
	http   bool // an HTTP listener (/healthz, /metrics)
	events bool // Slack's HTTP endpoints on that listener
}

// missingHalf is ErrNoTransport for an environment that set one setting of a pair: its text names the other.
type missingHalf struct{ msg string }

func (e missingHalf) Error() string { return e.msg }
func (e missingHalf) Unwrap() error { return ErrNoTransport }

// checkCredentials validates the Slack settings without revealing them; errors name the variable
// to fix.
func checkCredentials(env config.Env, haveListener bool) (slackModes, error) {
	m := slackModes{socket: env.SlackAppToken.Set(), http: env.HTTPAddr != "" || haveListener}
	m.events = m.http && env.SlackSigningSecret.Set()
	if !m.socket && !m.events {
		if m.http {
			return m, errors.New("SLACK_SIGNING_SECRET is not set: HTTP mode (RUNWATCH_HTTP_ADDR) needs the app's signing secret " +
				"(Basic Information → App Credentials), or set SLACK_APP_TOKEN for Socket Mode")
		}
		// One setting of a pair given: name the other, not both as if nothing were set.
		switch {
		case env.SlackBotToken.Set():
			return m, missingHalf{"SLACK_APP_TOKEN is not set: SLACK_BOT_TOKEN is, and Socket Mode needs the app-level token beside it " +
				"(xapp-…, Basic Information → App-Level Tokens, scope connections:write); or set RUNWATCH_HTTP_ADDR and SLACK_SIGNING_SECRET for HTTP mode"}
		case env.SlackSigningSecret.Set():
			return m, missingHalf{"RUNWATCH_HTTP_ADDR is not set: SLACK_SIGNING_SECRET is, and HTTP mode needs an address to listen on " +
				"(like :3000, behind your HTTPS proxy); or set SLACK_APP_TOKEN and SLACK_BOT_TOKEN for Socket Mode"}
		}
		return m, ErrNoTransport
	}
	if m.socket && !strings.HasPrefix(env.SlackAppToken.Reveal(), "xapp-") {
		return m, errors.New("SLACK_APP_TOKEN does not start with xapp-: Socket Mode needs an app-level token " +
			"(Basic Information → App-Level Tokens, scope connections:write), not a bot or user token")
	}
	if !env.SlackBotToken.Set() {
		return m, errors.New("SLACK_BOT_TOKEN is not set: the bot token (xoxb-…, OAuth & Permissions → Bot User OAuth Token) is needed to post")
	}
	if !strings.HasPrefix(env.SlackBotToken.Reveal(), "xoxb-") {
		return m, errors.New("SLACK_BOT_TOKEN does not start with xoxb-: use the Bot User OAuth Token from OAuth & Permissions")
	}
	if env.SlackAPIURL != "" {
		u, err := url.Parse(env.SlackAPIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Named as a probe's URL is: a proxy's password or key in it stays out of the error.
			return m, fmt.Errorf("SLACK_API_URL=%q is not an http(s) URL like https://slack.com/api/", probes.RedactURL(env.SlackAPIURL))
		}
	}
	return m, nil
}

// Serve runs the long-lived bot until ctx ends: the sampler and its warnings, the scheduled status
// posts, and the Slack transports (Socket Mode, HTTP mode or both); with o.ReadOnly, the transports
// alone. It returns an error naming the variable when credentials are missing or rejected.
func Serve(ctx context.Context, b *conversation.Bot, o ServeOptions) error {
	modes, err := checkCredentials(o.Env, o.Listener != nil)
	if err != nil {
		return err
	}
	red := redact.New(o.Env.SlackBotToken.Reveal(), o.Env.SlackAppToken.Reveal(), o.Env.SlackSigningSecret.Reveal())
	log := redact.Logger(o.Log, red)
	b.Log = log
	metrics := botmetrics.New()
	metrics.LogFailures(log)
	api := slackapp.NewAPI(slackapp.APIOptions{Token: o.Env.SlackBotToken, APIURL: o.Env.SlackAPIURL, HTTP: o.HTTP,
		Redactor: red, Metrics: metrics, Log: log})
	if o.Out != nil {
		// Said once per channel on the terminal too: the one thing to do before anything is posted there.
		api.OnChannelHeld = func(channel, advice string) {
			fmt.Fprintf(o.Out, "runwatch: cannot post in %s: %s\n", channel, advice)
		}
	}

	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	self, err := api.AuthTest(actx)
	cancel()
	if err != nil {
		if code, ok := slackapp.TokenRejected(err); ok {
			return fmt.Errorf("SLACK_BOT_TOKEN was rejected by Slack (%s): copy the Bot User OAuth Token from OAuth & Permissions, and reinstall the app if it was revoked", code)
		}
		return fmt.Errorf("check SLACK_BOT_TOKEN with auth.test: %w", err)
	}

	dir, err := state.Open(o.Env.StateDir)
	if err != nil {
		return fmt.Errorf("RUNWATCH_STATE_DIR: %w", err)
	}
	sched, err := posts.NewScheduler(b, api, dir, log, metrics)
	if err != nil {
		return err
	}
	sched.PostTimeout = o.Env.PostTimeout
	// After NewScheduler: the channel ids it restored decide whether a "#name" channel is in a list of ids.
	for _, r := range b.Monitor().Config().Runs {
		if r.Channel == "" {
			log.Info("run has no channel: no scheduled posts or warnings for it", "run", r.Name)
		} else if !b.PostAllowed(&r, r.Channel) {
			if strings.HasPrefix(r.Channel, "#") && b.ChannelID(r.Channel) == r.Channel {
				log.Warn("run's channel is not admitted by allowed_channels as written: no scheduled posts or warnings for it; "+
					"if the list gives it by id, they start once runwatch learns the name's id (a slash command from the channel), "+
					"or write the channel as its id (C…)", "run", r.Name, "channel", r.Channel)
			} else {
				log.Warn("run's channel is not in allowed_channels: no scheduled posts or warnings for it (write the channel as it is listed there, or list it)",
					"run", r.Name, "channel", r.Channel)
			}
		}
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	app := slackapp.NewApp(ctx, b, api, self, metrics, log)
	if err := app.Remember(dir); err != nil {
		log.Warn("delivered Slack requests not restored: one Slack redelivers across this restart may be answered twice", "err", err)
	}
	// Closed when Serve returns, after the transports and the answers in progress have stopped.
	defer app.CloseJournal()
	if o.InlineBudget > 0 {
		app.Inline = o.InlineBudget
	}

	every := o.SampleEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	duty := newDuty(b, api, o, log)
	var standby atomic.Pointer[string]
	if duty != nil {
		starting := "starting: looking in " + duty.Channel() + " for the instance of this app on duty"
		standby.Store(&starting)
		duty.OnStandby = func(holder string) {
			why := holder + " is on duty"
			standby.Store(&why)
			if o.Out != nil {
				fmt.Fprintf(o.Out, "runwatch: standing by: %s (duty messages in %s); this instance answers nothing and posts nothing, "+
					"and takes over once it stops. Ctrl-C stops.\n", why, duty.Channel())
			}
		}
		duty.OnDuty = func(how string) {
			if o.Out != nil && standby.Load() != nil && strings.HasSuffix(*standby.Load(), " is on duty") {
				fmt.Fprintf(o.Out, "runwatch: on duty now: %s.\n", how)
			}
		}
	}

	var srv *http.Server
	var how []string
	if modes.http {
		var hm *slackapp.HTTPMode
		if modes.events {
			hm = slackapp.NewHTTPMode(app, o.Env.SlackSigningSecret, metrics, log)
			if err := hm.Remember(dir); err != nil {
				log.Warn("seen Slack signatures not restored: a request replayed across this restart is refused only by its timestamp", "err", err)
			}
			defer hm.CloseJournal()
		} else {
			hm = slackapp.NewHTTPMode(nil, config.Secret{}, metrics, log)
		}
		hm.Standby = func() string {
			if why := standby.Load(); why != nil {
				return *why
			}
			return ""
		}
		ln := o.Listener
		if ln == nil {
			ln, err = net.Listen("tcp", o.Env.HTTPAddr)
			if err != nil {
				return fmt.Errorf("RUNWATCH_HTTP_ADDR: %w", err)
			}
		}
		srv = slackapp.NewHTTPServer(ln.Addr().String(), hm.Handler(), log)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http: %w", err)
			}
		}()
		what := "/healthz and /metrics"
		if modes.events {
			what = "Slack events, commands, " + what
		}
		how = append(how, fmt.Sprintf("HTTP on %s (%s)", ln.Addr(), what))
	}

	// One instance of the app answers and posts: another one's duty message in the channel makes this one
	// stand by (answering nothing, posting nothing, no Socket Mode connection) until it takes over.
	if duty != nil {
		if err := duty.Acquire(ctx); err != nil {
			if ctx.Err() != nil {
				stop()
				if srv != nil {
					srv.Close()
				}
				wg.Wait()
				return nil
			}
			log.Warn("duty messages unavailable: serving without them, so a second instance of this app would answer and post too",
				"channel", duty.Channel(), "err", err)
		} else {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := duty.Hold(ctx); err != nil {
					errc <- fmt.Errorf("%w; start this instance again to stand by", err)
				}
			}()
		}
		standby.Store(nil)
	}
	if o.ReadOnly == "" {
		sampler := posts.NewSampler(b, every, log)
		sampler.State = dir
		sampler.LoadState()
		sampler.Claims = posts.NewClaims(dir, log)
		app.Claims = sampler.Claims
		sampler.OnEvaluate = metrics.ObserveEvaluations
		sampler.OnSample = sched.RetryPending
		sampler.PostTimeout = o.Env.PostTimeout
		sampler.Deliver = slackapp.Deliver(b, api, metrics, o.Env.PostTimeout)
		sampler.Find = slackapp.Find(b, api)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sampler.Run(ctx)
		}()
		sched.Start(ctx)
	}
	if modes.socket {
		sm := slackapp.NewSocketMode(app, o.Env.SlackAppToken, o.Env.SlackBotToken, o.Env.SlackAPIURL, o.HTTP, log)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sm.Run(ctx); err != nil {
				errc <- err
			}
		}()
		how = append(how, "Socket Mode")
	}
	if o.ReadOnly != "" {
		log.Info("runwatch answering read-only: no warnings or scheduled posts until it has the state directory", "why", o.ReadOnly,
			"as", self.User, "team", self.Team, "transports", strings.Join(how, ", "), "runs", len(b.Monitor().Config().Runs))
		if o.Out != nil {
			fmt.Fprintf(o.Out, "runwatch: signed in to Slack as @%s; answering read-only on %s (%s). Ctrl-C stops.\n", self.User, strings.Join(how, " and "), o.ReadOnly)
		}
	} else {
		log.Info("runwatch serving", "as", self.User, "team", self.Team, "transports", strings.Join(how, ", "), "runs", len(b.Monitor().Config().Runs))
		if o.Out != nil {
			fmt.Fprintf(o.Out, "runwatch: signed in to Slack as @%s; serving %s. Ctrl-C stops.\n", self.User, strings.Join(how, " and "))
		}
	}

	var result error
	select {
	case <-ctx.Done():
	case result = <-errc:
	}
	stop()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(sctx)
		cancel()
	}
	sched.Stop(5 * time.Second)
	app.Wait(5 * time.Second)
	wg.Wait()
	return result
}

func runServe(ctx context.Context, a *app, args []string) error {
	fs := a.flags()
	demo := fs.Bool("demo", false, "watch a simulated vLLM job at accelerated time")
	if err := parseNoArgs(fs, args, "serve takes no arguments"); err != nil {
		return err
	}
	defer a.close()
	a.exclusive = true
	// While a console holds the state directory, the serve answers Slack from a read-only monitor (each
	// answer says why there are no warnings yet) rather than leave the channel with no answer at all.
	a.whileWaiting = func(ctx context.Context, m *monitor.Monitor, why string) error {
		b := a.bot(m)
		b.Notice = "runwatch is answering read-only: " + why + "; warnings and scheduled posts start when it exits."
		return Serve(ctx, b, ServeOptions{Env: a.env, Log: a.log, SampleEvery: a.sampleInterval(), Out: a.stdout, ReadOnly: why})
	}
	m, err := a.start(ctx, *demo, true)
	if err != nil {
		return err
	}
	b := a.bot(m)
	return Serve(ctx, b, ServeOptions{Env: a.env, Log: a.log, SampleEvery: a.sampleInterval(), Out: a.stdout})
}

// newDuty is the duty of this serve among the instances of its app (nil when RUNWATCH_DUTY_CHANNEL is off,
// the serve answers read-only, or no run has a channel runwatch may post in: then nothing is posted unasked, but answers would be
// given twice by two instances, which the log says). The duty channel is RUNWATCH_DUTY_CHANNEL, else the
// first run's. The instance is this host and the state directory: a restart is the same instance.
func newDuty(b *conversation.Bot, api *slackapp.API, o ServeOptions, log *slog.Logger) *slackapp.Duty {
	channel := o.Env.DutyChannel
	if strings.EqualFold(channel, "off") || o.ReadOnly != "" {
		// A serve answering read-only while its console holds the state directory posts nothing, a duty
		// message included; it is on duty once it has the directory, as a new serve.
		return nil
	}
	if channel == "" {
		for _, r := range b.Monitor().Config().Runs {
			if r.Channel != "" && b.PostAllowed(&r, r.Channel) {
				channel = r.Channel
				break
			}
		}
	}
	if channel == "" {
		log.Info("no channel for duty messages (no run has one, RUNWATCH_DUTY_CHANNEL is not set): " +
			"a second instance of this app would answer too")
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	stateDir, err := filepath.Abs(o.Env.StateDir)
	if err != nil {
		stateDir = o.Env.StateDir
	}
	d := slackapp.NewDuty(api, channel, host+":"+stateDir, host, os.Getpid())
	d.Log = log
	d.Loc = b.Location()
	if o.DutyClock != nil {
		d.Clock = o.DutyClock
	}
	return d
}
