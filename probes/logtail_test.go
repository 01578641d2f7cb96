package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// logTestTqdmLines returns the lines of the real tqdm sample.
func logTestTqdmLines(tb testing.TB) []string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vllm_offline_tqdm_progress_riscv_pr20292.log"))
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 7 {
		tb.Fatalf("fixture has %d lines; want 7", len(lines))
	}
	return lines
}

func logTestClose(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// logTestSame compares everything but Line, which is checked separately.
func logTestSame(got, want Progress) bool {
	return got.Done == want.Done && got.Total == want.Total && got.Errors == want.Errors &&
		logTestClose(got.Elapsed, want.Elapsed) && logTestClose(got.AvgTokens, want.AvgTokens) &&
		logTestClose(got.Rate, want.Rate) && got.Format == want.Format
}

func TestParseProgressTqdmFixture(t *testing.T) {
	lines := logTestTqdmLines(t)
	// Counts, H:MM:SS elapsed and s/it rates as printed in the real sample.
	want := []Progress{
		{Done: 212, Total: 1000, Elapsed: 3*3600 + 22*60 + 32, Rate: 1 / 50.90},
		{Done: 214, Total: 1000, Elapsed: 3*3600 + 23*60 + 36, Rate: 1 / 47.06},
		{Done: 217, Total: 1000, Elapsed: 3*3600 + 25*60 + 5, Rate: 1 / 41.86},
		{Done: 219, Total: 1000, Elapsed: 3*3600 + 26*60 + 18, Rate: 1 / 40.63},
		{Done: 220, Total: 1000, Elapsed: 3*3600 + 26*60 + 45, Rate: 1 / 38.81},
		{Done: 222, Total: 1000, Elapsed: 3*3600 + 27*60 + 46, Rate: 1 / 36.45},
		{Done: 225, Total: 1000, Elapsed: 3*3600 + 28*60 + 37, Rate: 1 / 29.06},
	}
	for i, line := range lines {
		t.Run(fmt.Sprintf("%d of 1000", want[i].Done), func(t *testing.T) {
			w := want[i]
			w.Format = "tqdm"
			got, ok := ParseProgress([]byte(line), nil)
			if !ok || !logTestSame(got, w) {
				t.Errorf("ParseProgress(%q) = %+v, %v; want %+v", line, got, ok, w)
			}
			if got.Line != line {
				t.Errorf("ParseProgress(%q).Line = %q; want the whole line", line, got.Line)
			}
		})
	}
}

func TestParseProgress(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Progress
		ok   bool
	}{
		{"script full", "Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s",
			Progress{Done: 300, Total: 25000, Rate: 0.7, AvgTokens: 1066, Elapsed: 408, Format: "progress"}, true},
		{"script with log prefix", "2025-06-01 12:00:01 INFO gen.py:88 Progress: 1200/25000 (3 errors), 0.9 req/s, avg completion: 1012 tokens, elapsed: 1h02m03s",
			Progress{Done: 1200, Total: 25000, Errors: 3, Rate: 0.9, AvgTokens: 1012, Elapsed: 3723, Format: "progress"}, true},
		{"script thousands separators", "Progress: 12,300/1,250,000 (1 error), 11.5 req/s, avg completion: 1,066.5 tokens, elapsed: 408.5s",
			Progress{Done: 12300, Total: 1250000, Errors: 1, Rate: 11.5, AvgTokens: 1066.5, Elapsed: 408.5, Format: "progress"}, true},
		{"script counts only", "Progress: 0/25000",
			Progress{Done: 0, Total: 25000, Format: "progress"}, true},
		{"script no elapsed", "Progress: 300/25000 (0 errors), 0.7 req/s",
			Progress{Done: 300, Total: 25000, Rate: 0.7, Format: "progress"}, true},
		{"script clock elapsed", "Progress: 5/10, elapsed: 1:02:03.",
			Progress{Done: 5, Total: 10, Elapsed: 3723, Format: "progress"}, true},
		{"tqdm it/s", "Processed prompts:  30%|███       | 980/3273 [00:13<00:00, 5753.50it/s, est. speed input: 5891.47 toks/s, output: 3391.17 toks/s]",
			Progress{Done: 980, Total: 3273, Elapsed: 13, Rate: 5753.50, Format: "tqdm"}, true},
		{"tqdm unknown rate", "Processed prompts:   0%|          | 0/1000 [00:00<?, ?it/s]",
			Progress{Done: 0, Total: 1000, Format: "tqdm"}, true},
		{"tqdm no description", " 45%|████▌     | 45/100 [01:05<01:20,  1.45s/it]",
			Progress{Done: 45, Total: 100, Elapsed: 65, Rate: 1 / 1.45, Format: "tqdm"}, true},
		{"tqdm no bar", "45/100 [01:05<01:20, 0.69it/s]",
			Progress{Done: 45, Total: 100, Elapsed: 65, Rate: 0.69, Format: "tqdm"}, true},
		{"tqdm unit scale", "Extracting: 41%|████      | 1.23k/3.00k [12:00<17:17, 1.71kit/s]",
			Progress{Done: 1230, Total: 3000, Elapsed: 720, Rate: 1710, Format: "tqdm"}, true},
		{"tqdm custom unit", "hidden states: 7%|▋         | 70/1000 [00:35<07:45, 2.00sample/s]",
			Progress{Done: 70, Total: 1000, Elapsed: 35, Rate: 2, Format: "tqdm"}, true},
		{"tqdm two updates on one line, newest wins", " 1%|          | 1/100 [00:01<01:39, 1.00it/s] 2%|▏         | 2/100 [00:02<01:38, 1.00it/s]",
			Progress{Done: 2, Total: 100, Elapsed: 2, Rate: 1, Format: "tqdm"}, true},
		{"tqdm cut mid-write", "Processed prompts:  23%|██▎       | 228/1000 [3:", Progress{}, false},
		{"tqdm cut before bracket", "Processed prompts:  23%|██▎       | 228/1000 [3:29:01<5:02:13, 23.5s/it", Progress{}, false},
		{"tqdm without total", "Processed prompts: 980it [00:13, 5753.50it/s]", Progress{}, false},
		{"tqdm zero total", "0/0 [00:00<?, ?it/s]", Progress{}, false},
		{"plain log line", "INFO 06-01 12:00:00 engine.py:301 Avg prompt throughput: 0.0 tokens/s", Progress{}, false},
		{"progress word without counts", "Progress: starting", Progress{}, false},
		{"empty", "", Progress{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseProgress([]byte(tt.line), nil)
			if ok != tt.ok || (ok && !logTestSame(got, tt.want)) {
				t.Errorf("ParseProgress(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
			}
			if ok && got.Line != strings.TrimSpace(tt.line) {
				t.Errorf("ParseProgress(%q).Line = %q", tt.line, got.Line)
			}
		})
	}
}

func TestParseProgressCustom(t *testing.T) {
	// A pattern as config.CompileProgressPattern passes it on.
	re := regexp.MustCompile(`step (?P<done>[\d,]+) of (?P<total>\d+)(?: \| loss [\d.]+)?(?: \| (?P<rate>[\d.]+) it/s)?(?: \| elapsed (?P<elapsed>\S+))?`)
	tests := []struct {
		line string
		want Progress
		ok   bool
	}{
		{"step 1,500 of 20000 | loss 1.23 | 3.5 it/s | elapsed 7m8s",
			Progress{Done: 1500, Total: 20000, Rate: 3.5, Elapsed: 428, Format: "custom"}, true},
		{"step 12 of 20000", Progress{Done: 12, Total: 20000, Format: "custom"}, true},
		// The built-in formats still apply when the custom pattern does not match.
		{"Progress: 3/4", Progress{Done: 3, Total: 4, Format: "progress"}, true},
		{"epoch 3 finished", Progress{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, ok := ParseProgress([]byte(tt.line), re)
			if ok != tt.ok || (ok && !logTestSame(got, tt.want)) {
				t.Errorf("ParseProgress(%q, custom) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func logTestWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLogRead(t *testing.T) {
	t.Parallel()
	tq := logTestTqdmLines(t)
	// tqdm rewrites its line with '\r' and never ends it; the last update
	// here is cut mid-write, as the original log was when it was copied.
	partial := tq[6][:strings.Index(tq[6], "[3:")+3]
	tqdmCR := "INFO starting\n" + strings.Join(tq[:6], "\r") + "\r" + partial
	noise := strings.Repeat("INFO 06-01 12:00:00 engine.py:301 Avg prompt throughput: 0.0 tokens/s\n", 2000) // ~140 KiB
	tests := []struct {
		name     string
		content  string
		want     Progress
		wantLine string
		wantErr  error
	}{
		{name: "script lines", content: "Progress: 1/10, elapsed: 1s\nINFO x\nProgress: 2/10, elapsed: 2s\nINFO y\n",
			want: Progress{Done: 2, Total: 10, Elapsed: 2, Format: "progress"}},
		{name: "tqdm carriage returns with a half-written update", content: tqdmCR,
			want: Progress{Done: 222, Total: 1000, Elapsed: 3*3600 + 27*60 + 46, Rate: 1 / 36.45, Format: "tqdm"}, wantLine: tq[5]},
		{name: "tqdm complete last update without newline", content: strings.Join(tq, "\r"),
			want: Progress{Done: 225, Total: 1000, Elapsed: 3*3600 + 28*60 + 37, Rate: 1 / 29.06, Format: "tqdm"}, wantLine: tq[6]},
		{name: "unterminated script line may be half written", content: "Progress: 2/10\nProgress: 3/1",
			want: Progress{Done: 2, Total: 10, Format: "progress"}},
		{name: "progress beyond the first window", content: "Progress: 7/10\n" + noise,
			want: Progress{Done: 7, Total: 10, Format: "progress"}},
		{name: "crlf line ends", content: "Progress: 4/10\r\nINFO x\r\n",
			want: Progress{Done: 4, Total: 10, Format: "progress"}},
		{name: "non-UTF-8 bytes", content: "Progress: 5/10 \xff\xfe (0 errors)\n",
			want: Progress{Done: 5, Total: 10, Format: "progress"}, wantLine: "Progress: 5/10 \uFFFD (0 errors)"},
		{name: "no progress", content: noise, wantErr: ErrNoProgress},
		{name: "empty", content: "", wantErr: ErrNoProgress},
		{name: "last line longer than the cap", content: "Progress: 1/2\n" + strings.Repeat("x", logTailCap+10) + "\n", wantErr: ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "job.log")
			logTestWrite(t, path, []byte(tt.content))
			got, err := NewLog(path, nil).Read(context.Background(), LogWant{})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Read(%s) = %+v, %v; want %v", tt.name, got.Progress, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("Read error %q does not name the file", err)
				}
				return
			}
			if err != nil || !logTestSame(got.Progress, tt.want) {
				t.Fatalf("Read(%s) = %+v, %v; want %+v", tt.name, got.Progress, err, tt.want)
			}
			if tt.wantLine != "" && got.Progress.Line != tt.wantLine {
				t.Errorf("Read(%s).Line = %q; want %q", tt.name, got.Progress.Line, tt.wantLine)
			}
			if !utf8.ValidString(got.Progress.Line) || len(got.Progress.Line) > logTailLineMax {
				t.Errorf("Read(%s).Line = %q; want valid UTF-8 of at most %d bytes", tt.name, got.Progress.Line, logTailLineMax)
			}
			if got.File.Size != int64(len(tt.content)) || got.File.Inode == 0 || got.File.Path != path {
				t.Errorf("Read(%s).File = %+v; want size %d, an inode and the path", tt.name, got.File, len(tt.content))
			}
		})
	}
}

func TestLogReadLineTooLongMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	logTestWrite(t, path, bytes.Repeat([]byte("x"), logTailCap+1))
	_, err := NewLog(path, nil).Read(context.Background(), LogWant{})
	want := "read " + path + ": no progress line in the last 4 MiB; the last line is longer than that"
	if err == nil || err.Error() != want || !errors.Is(err, ErrNoProgress) {
		t.Errorf("Read(one huge line) = %v; want %q", err, want)
	}
}

func TestLogReadLongLineIsClipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	// A tqdm line with a long postfix, cut so a multi-byte rune straddles 300 bytes.
	line := "Processed prompts:  30%|███       | 980/3273 [00:13<00:00, 5753.50it/s, note: " + strings.Repeat("é", 200) + "]"
	logTestWrite(t, path, []byte(line+"\n"))
	got, err := NewLog(path, nil).Read(context.Background(), LogWant{})
	if err != nil || got.Progress.Done != 980 {
		t.Fatalf("Read = %+v, %v; want 980 done", got.Progress, err)
	}
	if l := got.Progress.Line; len(l) > logTailLineMax || len(l) < logTailLineMax-1 || !utf8.ValidString(l) || !strings.HasPrefix(line, l) {
		t.Errorf("Read.Line = %q (%d bytes); want a valid prefix of the line of %d bytes at most", l, len(l), logTailLineMax)
	}
}

func TestLogReadErrors(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked.log")
	logTestWrite(t, locked, []byte("Progress: 1/2\n"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		want     error
		wantText string
		root     bool // meaningful when running as root
	}{
		{"missing", filepath.Join(dir, "nope.log"), fs.ErrNotExist, "no such file", true},
		{"fifo with no writer", fifo, ErrNotRegular, "a named pipe", true},
		{"directory", dir, ErrNotRegular, "a directory", true},
		{"permission denied", locked, fs.ErrPermission, "permission denied", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.root && os.Geteuid() == 0 {
				t.Skip("root reads files regardless of their mode")
			}
			_, err := NewLog(tt.path, nil).Read(context.Background(), LogWant{})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantText) || !strings.HasPrefix(err.Error(), "read "+tt.path+": ") {
				t.Errorf("Read(%s) = %v; want %v mentioning %q", tt.path, err, tt.want, tt.wantText)
			}
		})
	}
}

func TestLogReadCanceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	logTestWrite(t, path, []byte("Progress: 1/2\n"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLog(path, nil).Read(ctx, LogWant{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Read(canceled ctx) = %v; want context.Canceled", err)
	}
}

// TestLogReadFollowsRotation writes a log that grows, is rotated by rename
// and a new file, and is then truncated, reading after each step.
func TestLogReadFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gen.log")
	l := NewLog(path, nil)
	read := func() LogReading {
		t.Helper()
		r, err := l.Read(context.Background(), LogWant{})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		return r
	}
	appendLine := func(s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}

	appendLine("Progress: 100/1000, elapsed: 10s")
	first := read()
	appendLine("INFO checkpoint")
	appendLine("Progress: 200/1000, elapsed: 20s")
	grown := read()
	if grown.Progress.Done != 200 || grown.File.Inode != first.File.Inode || grown.File.Size <= first.File.Size {
		t.Fatalf("after growth: %+v (first %+v); want 200 done, same inode, larger size", grown, first)
	}

	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendLine("Progress: 5/1000, elapsed: 1s")
	rotated := read()
	if rotated.Progress.Done != 5 || rotated.File.Inode == grown.File.Inode {
		t.Fatalf("after rotation: %+v; want 5 done and a new inode (old %d)", rotated, grown.File.Inode)
	}

	appendLine("Progress: 6/1000, elapsed: 2s")
	before := read()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendLine("Progress: 1/50")
	truncated := read()
	if truncated.Progress.Done != 1 || truncated.Progress.Total != 50 || truncated.File.Size >= before.File.Size || truncated.File.Inode != before.File.Inode {
		t.Fatalf("after truncation: %+v (before %+v); want 1/50, a smaller size, the same inode", truncated, before)
	}
}

func TestLogReadCustomPattern(t *testing.T) {
	re := regexp.MustCompile(`saved (?P<done>\d+)/(?P<total>\d+) shards`)
	path := filepath.Join(t.TempDir(), "extract.log")
	logTestWrite(t, path, []byte("saved 3/40 shards\nsaved 4/40 shards\nflush\n"))
	got, err := NewLog(path, re).Read(context.Background(), LogWant{})
	if err != nil || got.Progress.Done != 4 || got.Progress.Total != 40 || got.Progress.Format != "custom" {
		t.Errorf("Read(custom) = %+v, %v; want 4/40 custom", got.Progress, err)
	}
}

// logTestTail is the end of every benchmark log: a real tqdm run.
func logTestTail(b *testing.B) []byte {
	lines := logTestTqdmLines(b)
	var tail []byte
	for len(tail) < 2*logTailWindow {
		for _, l := range lines {
			tail = append(tail, l...)
			tail = append(tail, '\r')
		}
	}
	return append(tail, lines[6]...)
}

func BenchmarkLogTail(b *testing.B) {
	tail := logTestTail(b)
	dir := b.TempDir()
	noiseLine := []byte("INFO 06-01 12:00:00 engine.py:301 Avg prompt throughput: 0.0 tokens/s\n")
	make1MiB := func() string {
		path := filepath.Join(dir, "1MiB.log")
		head := bytes.Repeat(noiseLine, (1<<20-len(tail))/len(noiseLine)+1)
		if err := os.WriteFile(path, append(head[:1<<20-len(tail)], tail...), 0o644); err != nil {
			b.Fatal(err)
		}
		return path
	}
	makeSparse := func() string {
		path := filepath.Join(dir, "2GiB.log")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(tail, 2<<30-int64(len(tail))); err != nil {
			b.Fatal(err)
		}
		return path
	}
	makeWorst := func() string {
		// Progress only before the last 4 MiB: every window up to the cap is read.
		path := filepath.Join(dir, "noprogress.log")
		noise := bytes.Repeat(noiseLine, logTailCap/len(noiseLine)+100)
		if err := os.WriteFile(path, append([]byte("Progress: 1/2\n"), noise...), 0o644); err != nil {
			b.Fatal(err)
		}
		return path
	}
	for _, bc := range []struct {
		name string
		path string
		want error
	}{
		{"1MiB", make1MiB(), nil},
		{"2GiB-sparse", makeSparse(), nil},
		{"no-progress-in-4MiB", makeWorst(), ErrNoProgress},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := NewLog(bc.path, nil)
			ctx := context.Background()
			for b.Loop() {
				r, err := l.Read(ctx, LogWant{})
				if !errors.Is(err, bc.want) || (err == nil && r.Progress.Done != 225) {
					b.Fatalf("Read = %+v, %v; want 225 done or %v", r.Progress, err, bc.want)
				}
			}
		})
	}
}

func FuzzParseProgress(f *testing.F) {
	for _, l := range logTestTqdmLines(f) {
		f.Add([]byte(l))
		f.Add([]byte(l[:len(l)/2]))
	}
	f.Add([]byte("Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s"))
	f.Add([]byte("Progress: 12,300/1,250,000 (1 error), 11.5 req/s, avg completion: 1,066.5 tokens, elapsed: 1h02m03s"))
	f.Add([]byte("Processed prompts:   0%|          | 0/1000 [00:00<?, ?it/s]"))
	re := regexp.MustCompile(`step (?P<done>\S+) of (?P<total>\S+)(?: (?P<elapsed>\S+))?(?: (?P<rate>\S+))?`)
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, custom := range []*regexp.Regexp{nil, re} {
			p, ok := ParseProgress(line, custom)
			if !ok {
				continue
			}
			if !utf8.ValidString(p.Line) || len(p.Line) > logTailLineMax {
				t.Errorf("ParseProgress(%q).Line = %q; want valid UTF-8 of at most %d bytes", line, p.Line, logTailLineMax)
			}
			if p.Done < 0 || p.Total < 0 || p.Errors < 0 || p.Elapsed < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) || math.IsNaN(p.Elapsed) {
				t.Errorf("ParseProgress(%q) = %+v; want non-negative finite numbers", line, p)
			}
			switch p.Format {
			case "progress", "tqdm", "custom":
			default:
				t.Errorf("ParseProgress(%q).Format = %q", line, p.Format)
			}
		}
	})
}

func TestClipTextKeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("a", 199) + "é and more" // é is two bytes, at 199-200
	if got := clipLine(s); !utf8.ValidString(got) || got != strings.Repeat("a", 199)+"…" {
		t.Errorf("clipLine cut %q; want 199 a's and an ellipsis, valid UTF-8", got[190:])
	}
	if got := ClipText("short", 200); got != "short" {
		t.Errorf("ClipText(short) = %q", got)
	}
}

// The bars the issue quotes: vLLM's per-batch bar and a datasets map, complete tqdm updates.
const (
	logTestBatchBar = "Processed prompts: 100%|##########| 200/200 [00:05<00:00, 38.10it/s]"
	logTestMapBar   = "Map: 100%|██████████| 25000/25000 [00:03<00:00, 7421.37 examples/s]"
)

// TestParseProgressStartsTheLine: a progress line starts the line, after nothing but what a logger puts
// before a message; text that quotes progress (a model's reply echoed into the log) is not one.
func TestParseProgressStartsTheLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{"Progress: 5/10", true},
		{"   Progress: 5/10", true},
		{"2026-12-07 03:12:01,123 - __main__ - INFO - Progress: 5/10", true},
		{"[2026-12-07 03:12:01] [INFO] Progress: 5/10", true},
		{"2026-12-07T03:12:01Z INFO synth.gen: Progress: 5/10", true},
		{"I1207 03:12:01.123456 4242 gen.go:88] Progress: 5/10", true},
		{"INFO 12-07 03:12:01 [gen.py:88] Progress: 5/10", true},
		{"Reply: Progress: 25000/25000", false},
		{`INFO 12-07 03:12:01 gen.py:88 completion 311: "the table reads Progress: 25000/25000 at the end"`, false},
		{"the model wrote Progress: 25000/25000", false},
		{logTestBatchBar, true},
		{"2026-12-07 03:12:01 INFO " + logTestBatchBar, true},
		{`Reply: "45/100 [01:05<01:20, 0.69it/s]"`, false},
	}
	for _, tt := range tests {
		if _, ok := ParseProgress([]byte(tt.line), nil); ok != tt.ok {
			t.Errorf("ParseProgress(%q) ok = %v; want %v", tt.line, ok, tt.ok)
		}
	}
}

// TestLogReadTheJobsOwnProgress: other bars never set done/total: an engine's per-batch bar and a
// datasets map after the job's own "Progress:" line, a bar whose total contradicts total:, a reply
// quoting "Progress: 25000/25000". They are named instead. A bar is the job's when it is the only one.
func TestLogReadTheJobsOwnProgress(t *testing.T) {
	tests := []struct {
		name       string
		content    string
		want       LogWant
		done, tot  int64
		err        string
		foreign    []string // descriptions named
		notForeign string
	}{
		{name: "an engine's batch bar after the job's line", content: "Progress: 300/25000 (0 errors)\n" + logTestBatchBar + "\n",
			done: 300, tot: 25000, foreign: []string{"Processed prompts"}},
		{name: "the same, total: set", content: "Progress: 300/25000 (0 errors)\n" + logTestBatchBar + "\n", want: LogWant{Total: 25000},
			done: 300, tot: 25000, foreign: []string{"Processed prompts"}},
		{name: "a datasets map after the job's line", content: "Progress: 300/25000\n" + logTestMapBar + "\n",
			done: 300, tot: 25000, foreign: []string{"Map"}},
		{name: "a reply that quotes progress", content: "Progress: 300/25000\nINFO completion 17: Progress: 25000/25000\nProgress: 311/25000\n",
			done: 311, tot: 25000},
		{name: "the only bar is the job's", content: logTestMapBar + "\n" + strings.Join([]string{"Processed prompts:  30%|███       | 980/3273 [00:13<00:00, 5753.50it/s]"}, "\r"),
			done: 980, tot: 3273, foreign: []string{"Map"}},
		{name: "a bar whose total contradicts total:", content: logTestBatchBar + "\n", want: LogWant{Total: 25000},
			err: `"Processed prompts" (200/200): its total (200) contradicts the run file's total: 25000`},
		{name: "a bar whose total is not the job's so far", content: logTestBatchBar + "\n", want: LogWant{Seen: 25000},
			err: `its total (200) is not the job's (25000, as counted so far)`},
		{name: "two bars, nothing to tell", content: "Extracting:  10%|█ | 10/100 [00:10<01:30, 1.00it/s]\n" + logTestBatchBar + "\n",
			err: `several progress bars and nothing to tell which is the job's`},
		{name: "two bars, total: tells", content: "Extracting:  10%|█ | 10/100 [00:10<01:30, 1.00it/s]\n" + logTestBatchBar + "\n", want: LogWant{Total: 100},
			done: 10, tot: 100, foreign: []string{"Processed prompts"}},
		{name: "job lines with another total than total:", content: "Progress: 300/30000\n", want: LogWant{Total: 25000},
			err: `"Progress:" (300/30000): its total (30000) contradicts the run file's total: 25000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "job.log")
			logTestWrite(t, path, []byte(tt.content))
			got, err := NewLog(path, nil).Read(context.Background(), tt.want)
			if tt.err != "" {
				if !errors.Is(err, ErrNoProgress) || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("Read = %+v, %v; want no progress, %q", got.Progress, err, tt.err)
				}
			} else if err != nil || got.Progress.Done != tt.done || got.Progress.Total != tt.tot {
				t.Errorf("Read = %d/%d, %v; want %d/%d", got.Progress.Done, got.Progress.Total, err, tt.done, tt.tot)
			}
			var named []string
			for _, f := range got.Foreign {
				named = append(named, f.Desc)
			}
			for _, d := range tt.foreign {
				if !slices.Contains(named, d) {
					t.Errorf("Foreign = %+v; want %q named", got.Foreign, d)
				}
			}
		})
	}
}
