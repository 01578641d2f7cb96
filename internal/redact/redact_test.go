package redact

import "testing"

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8000/metrics", "http://127.0.0.1:8000/metrics"},
		{"http://admin:PASSWORD@host:9000/metrics", "http://host:9000/metrics"},
		{"http://admin@host/metrics", "http://host/metrics"},
		{"https://host/metrics?api_key=KEY", "https://host/metrics?api_key=[redacted]"},
		{"https://host/x?token=T&sig=S&key&password=P#frag", "https://host/x?token=[redacted]&sig=[redacted]&key=[redacted]&password=[redacted]"},
		{"https://u:p@host/x?%zz=SECRET", "https://host/x?(name)=[redacted]"},
		{"https://host/x?", "https://host/x"},
		{"http://host:port:bad/PASSWORD", "http://(unparseable URL)"},
		{"::PASSWORD", "(unparseable URL)"},
		// No "//": the part after the scheme is opaque, and may be user:password@host.
		{"admin:PASSWORD@proxy.internal/api/", "admin:(opaque)"},
		{"http:admin:PASSWORD@host/x", "http:(opaque)"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestURLsIn(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no url here", "no url here"},
		{"GET http://host:8000/metrics 200", "GET http://host:8000/metrics 200"},
		{"connect http://wandb:PASSWORD@wandb.local/api?api_key=KEY now", "connect http://wandb.local/api?api_key=[redacted] now"},
		{"fetched (https://b.s3.amazonaws.com/x?X-Amz-Signature=SIG&X-Amz-Credential=AKIA).", "fetched (https://b.s3.amazonaws.com/x?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted])."},
		{"two: redis://:PASSWORD@r:6379/0, postgres://u:PASSWORD@db/x", "two: redis://r:6379/0, postgres://db/x"},
		{`url="https://h/p?token=T"`, `url="https://h/p?token=[redacted]"`},
		{"bad http://u:PASSWORD@h:port:x/y", "bad http://(unparseable URL)"},
		// A URL named already is named the same again; a bracket it opens is its own, one it does not is not.
		{"scrape http://h/metrics?model=[redacted]: 404", "scrape http://h/metrics?model=[redacted]: 404"},
		{"[at http://h/metrics?model=[redacted]].", "[at http://h/metrics?model=[redacted]]."},
		{"posting to https://hooks.slack.com/services/T1/B2/[redacted]", "posting to https://hooks.slack.com/services/T1/B2/[redacted]"},
		{"(see http://h/a_(b)?k=v)", "(see http://h/a_(b)?k=[redacted])"},
	}
	for _, tt := range tests {
		if got := URLsIn(tt.in); got != tt.want {
			t.Errorf("URLsIn(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
