package config

import (
	"strings"
	"testing"
)

func TestCompileProgressPattern(t *testing.T) {
	tests := []struct {
		expr    string
		wantErr string // substring; "" means success
	}{
		{`(?P<done>\d+)/(?P<total>\d+)`, ""},
		{`(?P<done>\d+)/(?P<total>\d+) (?P<errors>\d+) (?P<elapsed>\S+) (?P<avg_tokens>\d+) (?P<rate>[\d.]+)`, ""},
		{`(?<done>\d+) of (?<total>\d+)`, ""},
		{`(?P<done>\d+)`, "missing named group (?P<total>...)"},
		{`(\d+)/(\d+)`, "missing named group (?P<done>...) and (?P<total>...)"},
		{`(?P<done>\d+)/(?P<totl>\d+)`, "unknown group (?P<totl>)"},
		{`(?P<done>\d+`, "missing closing )"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			re, err := CompileProgressPattern(tt.expr)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CompileProgressPattern(%q) = %v; want success", tt.expr, err)
			case tt.wantErr == "" && re == nil:
				t.Errorf("CompileProgressPattern(%q) returned a nil regexp", tt.expr)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CompileProgressPattern(%q) = %v; want error containing %q", tt.expr, err, tt.wantErr)
			}
		})
	}
}
