package conversation

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"runwatch/reports"
)

// maxConsoleLine bounds one question typed (or piped) into the console.
const maxConsoleLine = 64 << 10

// Console answers questions read from in, one per line, writing plain-text answers to out. It
// returns nil at EOF. Lines longer than 64 KiB are refused, not fatal.
type Console struct {
	Bot *Bot
	In  io.Reader
	Out io.Writer
	// Prompt is printed before each question when non-empty (interactive terminals).
	Prompt string

	mu sync.Mutex // serialises writes to Out between answers and asynchronous notices
}

// Run reads and answers until EOF or ctx ends.
func (c *Console) Run(ctx context.Context) error {
	lines := make(chan string)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		errc <- readLines(ctx, c.In, lines)
	}()
	c.prompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				select {
				case err := <-errc:
					if err != nil {
						return fmt.Errorf("read console input: %w", err)
					}
				default:
				}
				return nil
			}
			line = strings.TrimSpace(line)
			if line == "" {
				c.prompt()
				continue
			}
			if line == tooLong {
				c.print(fmt.Sprintf("That line is longer than %d KiB; ask a shorter question.\n", maxConsoleLine>>10))
				c.prompt()
				continue
			}
			if line == "quit" || line == "exit" {
				return nil
			}
			rep := c.Bot.Ask(ctx, Request{Text: line, Source: "console"})
			c.print(rep.Message.Text() + "\n")
			c.prompt()
		}
	}
}

// tooLong stands in for a line over the limit; it cannot come from input (it holds a NUL).
const tooLong = "\x00too long"

// readLines sends each line of r to out; an over-long line is skipped to its end and sent as tooLong.
func readLines(ctx context.Context, r io.Reader, out chan<- string) error {
	br := bufio.NewReaderSize(r, maxConsoleLine)
	skipping := false
	for {
		b, err := br.ReadSlice('\n')
		var line string
		switch {
		case err == bufio.ErrBufferFull:
			skipping = true
			continue
		case skipping:
			skipping = false
			line = tooLong
		default:
			line = strings.ReplaceAll(string(b), "\x00", "")
		}
		if len(b) > 0 || line == tooLong {
			select {
			case out <- strings.TrimRight(line, "\r\n"):
			case <-ctx.Done():
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (c *Console) prompt() {
	if c.Prompt != "" {
		c.print(c.Prompt)
	}
}

// Notify prints an unprompted message (a warning, a scheduled status) between answers.
func (c *Console) Notify(text string) {
	c.print("\n" + text + "\n")
	c.prompt()
}

func (c *Console) print(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.Out, s)
}

// ConsolePoster shows the scheduler's status posts in the console, where Slack would show them in the
// run's channel: the console speaks up on the run's schedule as a channel would, not only when asked.
type ConsolePoster struct {
	c *Console
	n atomic.Int64
}

// NewConsolePoster is a poster for NewScheduler that prints to c.
func NewConsolePoster(c *Console) *ConsolePoster { return &ConsolePoster{c: c} }

// PostTagged prints a scheduled status, headed by where Slack would post it.
func (p *ConsolePoster) PostTagged(_ context.Context, channel, threadTS, _ string, m reports.Message) (string, string, error) {
	where := "Scheduled status for " + channel
	if threadTS != "" {
		where += " (in the day's thread)"
	}
	p.c.Notify(where + ":\n" + m.Text())
	return channel, fmt.Sprintf("console.%d", p.n.Add(1)), nil
}

// FindTagged finds nothing: the console keeps no messages to look up after a restart.
func (p *ConsolePoster) FindTagged(context.Context, string, string, string, time.Time) (string, error) {
	return "", nil
}

// Update prints the living message's new text (post_mode: update edits it in place in Slack).
func (p *ConsolePoster) Update(_ context.Context, channel, _ string, m reports.Message) error {
	p.c.Notify("Scheduled status for " + channel + " (the living message, updated):\n" + m.Text())
	return nil
}

// Upload does nothing: a chart's PNG is for Slack, and the status text already gives its figures.
func (p *ConsolePoster) Upload(context.Context, string, string, Attachment) error { return nil }
