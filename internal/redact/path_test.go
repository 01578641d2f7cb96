package redact

import (
	"strings"
	"testing"

	_ "runwatch/internal/racequiet" // no second of sleep at the test binary's exit under -race
)

func TestURLPath(t *testing.T) {
	tests := []struct{ in, want string }{
		// Kept: ordinary paths, hosts, ports, short ids, names, dates, numbers.
		{"http://10.0.0.7:8000/metrics", "http://10.0.0.7:8000/metrics"},
		{"https://prom.example/api/v1/query", "https://prom.example/api/v1/query"},
		{"https://prom.example:9090/federate", "https://prom.example:9090/federate"},
		{"http://gw.internal/v1/models", "http://gw.internal/v1/models"},
		{"http://gw.internal/node-3/metrics", "http://gw.internal/node-3/metrics"},
		{"http://gw.internal/replica/12/metrics", "http://gw.internal/replica/12/metrics"},
		{"http://gw.internal/models/Meta-Llama-3.1-70B-Instruct/metrics", "http://gw.internal/models/Meta-Llama-3.1-70B-Instruct/metrics"},
		{"http://gw.internal/DeepSeek-R1-Distill-Qwen-32B-Instruct-AWQ/metrics", "http://gw.internal/DeepSeek-R1-Distill-Qwen-32B-Instruct-AWQ/metrics"},
		{"http://gw.internal/kube-prometheus-stack-1700000000/metrics", "http://gw.internal/kube-prometheus-stack-1700000000/metrics"},
		{"http://gw.internal/runs/2026-12-02/shard-0007/metrics", "http://gw.internal/runs/2026-12-02/shard-0007/metrics"},
		{"http://gw.internal/jobs/1234567890123456789/metrics", "http://gw.internal/jobs/1234567890123456789/metrics"},
		{"http://gw.internal/prometheus-operator-kube-prometheus/api/v1/query", "http://gw.internal/prometheus-operator-kube-prometheus/api/v1/query"},
		{"http://gw.internal/sk-learn/metrics", "http://gw.internal/sk-learn/metrics"},
		{"http://gw.internal/bot/metrics", "http://gw.internal/bot/metrics"},
		{"https://k8s.example/api/v1/namespaces/ml/pods/bot1:8000/proxy/metrics", "https://k8s.example/api/v1/namespaces/ml/pods/bot1:8000/proxy/metrics"},
		{"http://gw.internal/abcdef0123456789/metrics", "http://gw.internal/abcdef0123456789/metrics"}, // 16 hex: a short id
		{"https://discord.com/api/webhooks/123456789012345678/x", "https://discord.com/api/webhooks/123456789012345678/x"},
		{"http://[::1]:8000/metrics", "http://[::1]:8000/metrics"},
		{"https://hooks.slack.com/", "https://hooks.slack.com/"},

		// Hidden: tokens in the path, each segment on its own.
		{"https://gw.example/bot123456789:AAH4xk9Zq0-LmNoPqRsTuVwXyZ012345678/metrics", "https://gw.example/[redacted]/metrics"},
		{"https://api.telegram.org/bot42:abc/getMe", "https://api.telegram.org/[redacted]/getMe"},
		{"https://prom.example/api/prom/3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b/api/v1/query", "https://prom.example/api/prom/[redacted]/api/v1/query"},
		{"https://prom.example/api/prom/eyJrIjoiN2I4ZTk2YWQ1ZjA0NDRh/api/v1/query", "https://prom.example/api/prom/[redacted]/api/v1/query"},
		{"https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX", "https://hooks.slack.com/services/T000/B000/[redacted]"},
		{"https://HOOKS.slack.com/services/T0A1B2C3D/B0E4F5G6H/abc", "https://HOOKS.slack.com/services/T0A1B2C3D/B0E4F5G6H/[redacted]"},
		{"https://hooks.slack.com/triggers/T0001/4123456789/0a1b2c3d4e5f/extra", "https://hooks.slack.com/triggers/T0001/4123456789/[redacted]/[redacted]"},
		{"https://discord.com/api/webhooks/123456789012345678/Zx9_aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3wX4yZ5-aB6cD7eF8gH9iJ0kL1mN2oP3q", "https://discord.com/api/webhooks/123456789012345678/[redacted]"},
		{"https://hc-ping.com/5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278", "https://hc-ping.com/[redacted]"},
		{"https://gw.example/v1/sk-proj-4fJk29dLq0ZpXw/metrics", "https://gw.example/v1/[redacted]/metrics"},
		{"https://gw.example/xoxb-1234-5678-abcdEFGH/x", "https://gw.example/[redacted]/x"},
		{"https://gw.example/ghp_16C7e42F292c6912E7710c838347Ae178B4a/metrics", "https://gw.example/[redacted]/metrics"},
		{"https://gitlab.example/glpat-xxxxxxxxxxxxxxxxxxxx/metrics", "https://gitlab.example/[redacted]/metrics"},
		{"https://gw.example/hf_abcdefghijklmnopqrstuvwxyz123456/metrics", "https://gw.example/[redacted]/metrics"},
		{"https://gw.example/AKIAIOSFODNN7EXAMPLE/metrics", "https://gw.example/[redacted]/metrics"},
		{"https://gw.example/k/a1B2c3D4e5F6g7H8i9J0/metrics", "https://gw.example/k/[redacted]/metrics"},
		{"https://gw.example/k/da39a3ee5e6b4b0d3255bfef95601890afd80709", "https://gw.example/k/[redacted]"},
		{"https://gw.example/k/a1B2c3D4e5F6g7H8i9J0%2Fk2L3m4N5o6P7q8R9s0T1/x", "https://gw.example/k/[redacted]/x"},
		// With the rest of the redaction: user info, query values.
		{"https://u:PW@gw.example/bot1:TOKEN/metrics?key=K", "https://gw.example/[redacted]/metrics?key=[redacted]"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestURLsInPath(t *testing.T) {
	in := `scrape https://gw.example/bot123:AAH4xk9Zq0LmNoPqRsTu/metrics failed; posting to https://hooks.slack.com/services/T1/B2/s3cr3tSeCrEt. ok http://h:8000/metrics`
	want := `scrape https://gw.example/[redacted]/metrics failed; posting to https://hooks.slack.com/services/T1/B2/[redacted]. ok http://h:8000/metrics`
	if got := URLsIn(in); got != want {
		t.Errorf("URLsIn(%q) = %q; want %q", in, got, want)
	}
}

func TestPathSecrets(t *testing.T) {
	got := PathSecrets("https://gw.example/bot1:A%2Fb/metrics")
	if strings.Join(got, " ") != "bot1:A%2Fb bot1:A/b" {
		t.Errorf("PathSecrets = %q; want the segment as written and decoded", got)
	}
	if got := PathSecrets("http://h/metrics"); len(got) != 0 {
		t.Errorf("PathSecrets(plain) = %q; want none", got)
	}
}
