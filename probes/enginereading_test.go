package probes

import (
	"fmt"
	"strings"
	"testing"
)

func TestPromReadings(t *testing.T) {
	insts := []PromInstance{
		{Name: "a:8000", Up: 1, HasUp: true, Engine: Engine{Kind: "vllm", GenerationTokens: 100}},
		{Name: "b:8000", Up: 0, HasUp: true},
		{Name: "c:8000", Up: 0, HasUp: true},
		{Name: "n:9100", Up: 1, HasUp: true}, // node_exporter matching the selector: not an engine
	}
	known := map[string]bool{PromCounterPrefix + "b:8000": true, PromCounterPrefix + "gone:8000": true, "http://direct/metrics": true}
	readings, down := PromReadings(insts, "http://prom", known)
	var got []string
	for _, r := range readings {
		got = append(got, fmt.Sprintf("%s ok=%v", r.Host, r.Err == nil))
	}
	if want := "a:8000 ok=true, b:8000 ok=false, gone:8000 ok=false"; strings.Join(got, ", ") != want {
		t.Errorf("readings = %s; want %s", strings.Join(got, ", "), want)
	}
	if strings.Join(down, ",") != "c:8000" {
		t.Errorf("down = %v; want c:8000 (never an engine, so a problem, not an engine)", down)
	}
}
