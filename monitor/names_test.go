package monitor

import (
	"strings"
	"testing"
)

// TestMetricsNamesPathTokens: URLs that differ only in a hidden path token (two Telegram-style bot
// gateways, two tenants' keys) name themselves alike once redacted, and are still keyed apart and
// shown with their place in the list; neither key nor name carries a token.
func TestMetricsNamesPathTokens(t *testing.T) {
	const tokA, tokB = "AAH4xk9Zq0LmNoPqRsTu01", "AAH4xk9Zq0LmNoPqRsTu02"
	urls := []string{
		"https://gw.example/bot1:" + tokA + "/metrics",
		"https://gw.example/bot1:" + tokB + "/metrics",
		"http://10.0.0.7:8000/metrics",
	}
	got := metricsNames(urls)
	if got[0].key == got[1].key {
		t.Errorf("metricsNames keys %q and %q; want two URLs differing in their path token keyed apart", got[0].key, got[1].key)
	}
	for i, want := range []string{
		"https://gw.example/[redacted]/metrics (metrics entry 1)",
		"https://gw.example/[redacted]/metrics (metrics entry 2)",
		"http://10.0.0.7:8000/metrics",
	} {
		if got[i].shown != want {
			t.Errorf("metricsNames(...)[%d].shown = %q; want %q", i, got[i].shown, want)
		}
		for _, tok := range []string{tokA, tokB} {
			if strings.Contains(got[i].key, tok) || strings.Contains(got[i].shown, tok) {
				t.Errorf("metricsNames(...)[%d] = %+v; want no token", i, got[i])
			}
		}
	}
	if got[2].key != got[2].shown {
		t.Errorf("metricsNames(...)[2] = %+v; want a URL without collision keyed by its name", got[2])
	}
}
