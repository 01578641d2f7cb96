package posts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/conversation"
	"runwatch/internal/testkit"
	"runwatch/posts"
	"runwatch/reports"
)

func TestFinishShareWarningEndToEnd(t *testing.T) {
	tests := []struct {
		name    string
		batches []int
		warnAt  int // the sample after which the warning is posted; -1 never
	}{
		{"steady share", []int{1, 2, 3, 4}, -1},
		{"ignore_eos from batch 5", []int{1, 2, 3, 4, 5, 6}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bodies [][]byte
			for _, b := range tt.batches {
				bodies = append(bodies, testkit.Fixture(t, fmt.Sprintf("llmd_sim_vllm_finish_reason_batch%d.txt", b)))
			}
			url, next := testkit.Recorded(t, bodies)
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			b := signalsBot(t, url, &now)
			a := posts.NewAlerter(time.UTC, func(string) string { return "#synth" })
			var warned []int
			for i := range bodies {
				evs := b.Monitor().Sample(context.Background())
				for _, p := range a.Process(evs, now, func(string) bool { return false }) {
					if p.Kind == posts.AlertFinishShare {
						warned = append(warned, i)
						text := p.Message.Text()
						if !strings.Contains(text, "completions that hit max_tokens (64) rose from 14% of the 160 before to 100% of the latest 40 finished requests") {
							t.Errorf("warning text = %q", text)
						}
						blocks, err := json.Marshal(p.Message.Blocks())
						if err != nil || !strings.Contains(string(blocks), "rose from 14%") {
							t.Errorf("warning blocks = %s, %v; want the jump in a block", blocks, err)
						}
					}
				}
				now = now.Add(time.Minute)
				next()
			}
			if want := tt.warnAt; (want < 0 && len(warned) != 0) || (want >= 0 && (len(warned) != 1 || warned[0] != want)) {
				t.Errorf("finish-share warnings after samples %v; want only after sample %d (-1: none)", warned, want)
			}
		})
	}
}

func TestDrafterInStatusAndWarning(t *testing.T) {
	base := string(testkit.Fixture(t, "vllm_v1_spec_decode_opt125m_ngram_pr24127_constructed.txt"))
	num := regexp.MustCompile(`(?m)^(vllm:spec_decode_num_(drafts|draft_tokens|accepted_tokens|accepted_tokens_per_pos)_total\{[^}]*\}) ([0-9.]+)$`)
	scaled := func(drafts, accepted float64) []byte {
		return []byte(num.ReplaceAllStringFunc(base, func(line string) string {
			m := num.FindStringSubmatch(line)
			v, _ := strconv.ParseFloat(m[3], 64)
			f := drafts
			if strings.HasPrefix(m[2], "accepted") {
				f = accepted
			}
			return fmt.Sprintf("%s %g", m[1], v*f)
		}))
	}
	url, next := testkit.Recorded(t, [][]byte{scaled(1, 1), scaled(5, 5), scaled(9, 9), scaled(13, 10)})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	b := signalsBot(t, url, &now)
	a := posts.NewAlerter(time.UTC, func(string) string { return "#synth" })
	var drops int
	for i := 0; i < 4; i++ {
		evs := b.Monitor().Sample(context.Background())
		for _, p := range a.Process(evs, now, func(string) bool { return false }) {
			if p.Kind == posts.AlertDrafterDrop {
				drops++
				if i != 3 || !strings.Contains(p.Message.Text(), "drafter acceptance fell from 89% of the 2,655 draft tokens before to 22% of the latest 1,180") {
					t.Errorf("sample %d: drafter warning %q", i, p.Message.Text())
				}
			}
		}
		if i == 0 {
			msg := reports.RenderStatus(evs[0].Run, now, time.UTC)
			if want := "Drafter: 89% of draft tokens accepted, 5.44 tokens per step (by draft position: 98% 95% 92% 88% 71%) over 295 draft tokens"; !strings.Contains(msg.Text(), want) {
				t.Errorf("status text = %q; want %q", msg.Text(), want)
			}
			blocks, _ := json.Marshal(msg.Blocks())
			if !strings.Contains(string(blocks), "5.44 tokens per step") {
				t.Errorf("status blocks = %s; want the drafter line", blocks)
			}
		}
		now = now.Add(time.Minute)
		next()
	}
	if drops != 1 {
		t.Errorf("drafter warnings = %d; want 1 (after the fourth sample)", drops)
	}
}

func signalsBot(t *testing.T, url string, now *time.Time) *conversation.Bot {
	t.Helper()
	return conversation.NewBot(testkit.MetricsOnly(t, url, now), time.UTC, config.Env{})
}
