package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"
)

// Secret is a credential. It formats as "[redacted]" so it cannot leak through a log line or an
// error string by accident; Reveal gives the value to the one place that sends it.
type Secret struct{ v string }

// NewSecret wraps a credential.
func NewSecret(v string) Secret { return Secret{v} }

// Reveal returns the credential itself.
func (s Secret) Reveal() string { return s.v }

// Set reports whether the credential is non-empty.
func (s Secret) Set() bool { return s.v != "" }

// String implements fmt.Stringer without revealing the value.
func (s Secret) String() string {
	if s.v == "" {
		return "[unset]"
	}
	return "[redacted]"
}

// GoString keeps %#v from revealing the value.
func (s Secret) GoString() string { return s.String() }

// MarshalText keeps encoders from revealing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Env is the process environment runwatch reads. Every variable is documented in .env.example.
type Env struct {
	ConfigPath     string        // RUNWATCH_CONFIG
	ProcRoot       string        // RUNWATCH_PROC_ROOT, default /proc
	StateDir       string        // RUNWATCH_STATE_DIR
	SampleInterval time.Duration // RUNWATCH_SAMPLE_INTERVAL, default 30s
	ProbeTimeout   time.Duration // RUNWATCH_PROBE_TIMEOUT, default 2s
	PostTimeout    time.Duration // RUNWATCH_POST_TIMEOUT, default 30s

	HTTPAddr           string // RUNWATCH_HTTP_ADDR
	SlackBotToken      Secret // SLACK_BOT_TOKEN
	SlackAppToken      Secret // SLACK_APP_TOKEN
	SlackSigningSecret Secret // SLACK_SIGNING_SECRET
	SlackAPIURL        string // SLACK_API_URL

	AllowedChannels []string // RUNWATCH_ALLOWED_CHANNELS, comma-separated
	Admins          []string // RUNWATCH_ADMINS, comma-separated user ids
	// DutyChannel is where instances of one app agree which of them is on duty (RUNWATCH_DUTY_CHANNEL): a
	// channel name or id; empty: the first run's channel; "off": no agreement, every instance answers.
	DutyChannel string

	// RUNWATCH_DISCOVER: "off" turns discovery off (DiscoverOff); a comma-separated list of PIDs limits it
	// to those processes and their descendants (DiscoverOnly); empty or "on": every process it can see.
	DiscoverOff  bool
	DiscoverOnly []int
}

// EnvVars lists every variable LoadEnv reads, for documentation checks.
var EnvVars = []string{
	"RUNWATCH_CONFIG", "RUNWATCH_PROC_ROOT", "RUNWATCH_STATE_DIR", "RUNWATCH_SAMPLE_INTERVAL",
	"RUNWATCH_PROBE_TIMEOUT", "RUNWATCH_HTTP_ADDR", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
	"SLACK_SIGNING_SECRET", "SLACK_API_URL", "RUNWATCH_ALLOWED_CHANNELS", "RUNWATCH_ADMINS", "RUNWATCH_DISCOVER",
	"RUNWATCH_DUTY_CHANNEL", "RUNWATCH_POST_TIMEOUT",
}

// EnvOnly are the variables taken from the process environment alone, never from a .env file: whoever can
// write a file in the working directory must not be able to choose where the bot token is sent.
var EnvOnly = []string{"SLACK_API_URL"}

// LoadDotEnv loads a .env file into the process environment without overriding variables already
// set. A missing file is not an error. The variables of EnvOnly it holds are not set: they are returned,
// for the caller to say so.
func LoadDotEnv(path string) (ignored []string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	vals, err := godotenv.UnmarshalBytes(b)
	if err != nil {
		// The parser's error quotes the file from the bad line on, or a value's first line: secrets.
		return nil, fmt.Errorf("read %s: line %d is not NAME=value, or opens a quote it does not close (its text is not shown: a .env holds secrets)",
			path, dotEnvBadLine(b))
	}
	for k, v := range vals {
		if slices.Contains(EnvOnly, k) {
			ignored = append(ignored, k)
			continue
		}
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, v); err != nil {
				return nil, fmt.Errorf("set %s from %s: %w", k, path, err)
			}
		}
	}
	slices.Sort(ignored)
	return ignored, nil
}

// dotEnvBadLine is the number of the line of a .env that does not parse: the one after the longest
// prefix of the file that does. (The first prefix that fails is no guide: one that ends inside a
// quoted value of several lines, a PEM key, fails too.)
func dotEnvBadLine(b []byte) int {
	lines := strings.SplitAfter(string(b), "\n")
	bad := 1
	for i := range lines {
		if _, err := godotenv.Unmarshal(strings.Join(lines[:i+1], "")); err == nil {
			bad = i + 2
		}
	}
	return min(bad, len(lines))
}

// LoadEnv reads the settings from lookup (os.LookupEnv in production) and applies defaults.
func LoadEnv(lookup func(string) (string, bool)) (Env, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	e := Env{
		ConfigPath:         get("RUNWATCH_CONFIG"),
		ProcRoot:           get("RUNWATCH_PROC_ROOT"),
		StateDir:           get("RUNWATCH_STATE_DIR"),
		HTTPAddr:           get("RUNWATCH_HTTP_ADDR"),
		SlackBotToken:      NewSecret(get("SLACK_BOT_TOKEN")),
		SlackAppToken:      NewSecret(get("SLACK_APP_TOKEN")),
		SlackSigningSecret: NewSecret(get("SLACK_SIGNING_SECRET")),
		SlackAPIURL:        get("SLACK_API_URL"),
		AllowedChannels:    splitList(get("RUNWATCH_ALLOWED_CHANNELS")),
		Admins:             splitList(get("RUNWATCH_ADMINS")),
		DutyChannel:        get("RUNWATCH_DUTY_CHANNEL"),
	}
	if e.ProcRoot == "" {
		e.ProcRoot = "/proc"
	}
	if e.StateDir == "" {
		e.StateDir = defaultStateDir(get)
	}
	var err error
	if e.SampleInterval, err = envDuration(get, "RUNWATCH_SAMPLE_INTERVAL", 30*time.Second); err != nil {
		return Env{}, err
	}
	if e.ProbeTimeout, err = envDuration(get, "RUNWATCH_PROBE_TIMEOUT", 2*time.Second); err != nil {
		return Env{}, err
	}
	if e.PostTimeout, err = envDuration(get, "RUNWATCH_POST_TIMEOUT", 30*time.Second); err != nil {
		return Env{}, err
	}
	if e.DiscoverOff, e.DiscoverOnly, err = discoverScope(get("RUNWATCH_DISCOVER")); err != nil {
		return Env{}, err
	}
	if e.SlackAPIURL != "" && !strings.HasSuffix(e.SlackAPIURL, "/") {
		e.SlackAPIURL += "/"
	}
	return e, nil
}

func envDuration(get func(string) string, key string, def time.Duration) (time.Duration, error) {
	s := get(key)
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration like 30s or 2m", key, s)
	}
	return d, nil
}

func defaultStateDir(get func(string) string) string {
	if x := get("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "runwatch")
	}
	if h := get("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "runwatch")
	}
	return filepath.Join(os.TempDir(), "runwatch-state")
}

// discoverScope reads RUNWATCH_DISCOVER: on (or empty), off, or PIDs.
func discoverScope(s string) (off bool, only []int, err error) {
	switch strings.ToLower(s) {
	case "", "on", "true", "1":
		return false, nil, nil
	case "off", "false", "0":
		return true, nil, nil
	}
	for _, f := range splitList(s) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return false, nil, fmt.Errorf("RUNWATCH_DISCOVER=%q: give on, off, or the PIDs of the job and its engines (like 1234,4242)", s)
		}
		only = append(only, pid)
	}
	return false, only, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}
