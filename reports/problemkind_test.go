package reports

import "testing"

func TestProblemKind(t *testing.T) {
	for probe, want := range map[string]string{
		"prometheus target gpu-node-3:8000":          "prometheus target",
		"prometheus http://user:secret@prom:9090":    "prometheus",
		"prometheus exporter host 10.0.0.7":          "prometheus exporter host",
		"metrics http://10.0.0.1:8000/metrics":       "metrics",
		"statfs /data":                               "statfs",
		"state synth":                                "state",
		"state":                                      "state",
		"disk activity":                              "disk activity",
		"log /data/gen.log":                          "log",
		"logs":                                       "other",
		"something new http://10.0.0.1:8000/metrics": "other",
	} {
		if got := (Problem{Probe: probe}).Kind(); got != want {
			t.Errorf("Problem{Probe: %q}.Kind() = %q; want %q", probe, got, want)
		}
	}
}
