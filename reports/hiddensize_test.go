package reports

import (
	"strings"
	"testing"

	"runwatch/probes"
)

func TestMeasurePlan(t *testing.T) {
	free := uint64(2e12)
	three := EvaluatePlan(PlanSpec{Name: "three", Target: "/data/hs", Tokens: 25e6, TokensSrc: "configured", Layers: []int{2, 30, 58}, NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}, &free, "/data", "")
	all := EvaluatePlan(PlanSpec{Name: "all", Target: "/data/hs", Tokens: 25e6, TokensSrc: "configured", AllLayers: true, NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}, &free, "/data", "")
	// What a scan of 3,984 tokens of three layers (43,008 B each) plus input ids and a mask found.
	perTok := int64(3*7168*2 + 8 + 1)
	files := probes.Written{Dir: "/data/hs", Files: 7, Safetensors: 6, SafetensorsBytes: 3984 * perTok, Bytes: 3984*perTok + 9, TokensInFiles: 3984, HeadersRead: 5}

	tests := []struct {
		name     string
		plan     PlanResult
		w        probes.Written
		done     float64
		disagree bool
		fits     bool
		want     []string
	}{
		{"agrees", three, files, 0, false, true, []string{
			"Measured: `/data/hs` holds 171 MB in 7 files, 3,984 tokens by the safetensors headers: *43.0 kB per token*",
			"→ 1.08 TB at 25M tokens, 1.08 TB still to write, 2.00 TB free: fits.",
			"The plan's 43.0 kB per token agrees."}},
		{"disagrees", all, files, 0, true, true, []string{
			"*43.0 kB per token*", ":warning: The plan (61 layers × 7,168 × 2 B) says 874 kB per token; the files hold 20.3× less."}},
		// Without headers, the job's progress gives the tokens: 1% of 25M.
		{"by progress", three, probes.Written{Dir: "/data/hs", Files: 3, Bytes: 250000 * perTok}, 0.01, false, true, []string{
			"250K tokens by the job progress: *43.0 kB per token*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mp := MeasurePlan(tt.plan, tt.w, tt.done)
			if mp.Disagree != tt.disagree || mp.Fits == nil || *mp.Fits != tt.fits {
				t.Errorf("MeasurePlan = %+v; want disagree %v, fits %v", mp, tt.disagree, tt.fits)
			}
			for _, w := range tt.want {
				if !strings.Contains(mp.Sentence, w) {
					t.Errorf("Sentence = %q; want %q in it", mp.Sentence, w)
				}
			}
		})
	}

	small := uint64(5e11)
	tight := EvaluatePlan(PlanSpec{Name: "three", Target: "/data/hs", Tokens: 25e6, TokensSrc: "configured", Layers: []int{2, 30, 58}, NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}, &small, "/data", "")
	if mp := MeasurePlan(tight, files, 0); mp.Fits == nil || *mp.Fits || !strings.Contains(mp.Sentence, "only 500 GB free: *does not fit*") {
		t.Errorf("tight = %+v", mp)
	}
	if mp := MeasurePlan(three, probes.Written{Files: 1, Bytes: 100}, 0.5); mp.BytesPerToken != 0 || !strings.Contains(mp.Sentence, "too little to measure") {
		t.Errorf("tiny = %+v", mp)
	}
	if mp := MeasurePlan(three, probes.Written{Files: 10, Bytes: 5 << 20}, 0); !strings.Contains(mp.Sentence, "no token count to divide by") {
		t.Errorf("no tokens = %+v", mp)
	}
}
