package reports

import (
	"strings"
	"testing"
)

func TestEvaluatePlanHiddenStates(t *testing.T) {
	free := uint64(2.8e12)
	base := PlanSpec{Name: "hs", Target: "/data/hs", Tokens: 25e6, TokensSrc: "configured", NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}
	tests := []struct {
		name       string
		layers     []int
		all        bool
		wantBytes  float64
		wantFits   bool
		wantPhrase []string
	}{
		{"all layers", nil, true, 61 * 7168 * 2 * 25e6, false, []string{"all 61 layers", "21.9 TB", "does not fit", "2.80 TB free", "19.1 TB short"}},
		{"three layers", []int{2, 30, 58}, false, 3 * 7168 * 2 * 25e6, true, []string{"3 of 61 layers (2, 30, 58)", "1.08 TB", "fits", "1.72 TB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.AllLayers, s.Layers = tt.all, tt.layers
			r := EvaluatePlan(s, &free, "/data", "")
			if r.BytesNeeded != tt.wantBytes {
				t.Errorf("BytesNeeded = %g; want %g", r.BytesNeeded, tt.wantBytes)
			}
			if r.Fits == nil || *r.Fits != tt.wantFits {
				t.Errorf("Fits = %v; want %v", r.Fits, tt.wantFits)
			}
			wantMax := float64(int64(float64(free) / r.BytesPerToken))
			if r.MaxTokens == nil || *r.MaxTokens != wantMax {
				t.Errorf("MaxTokens = %v; want %g", r.MaxTokens, wantMax)
			}
			for _, p := range tt.wantPhrase {
				if !strings.Contains(r.Sentence, p) {
					t.Errorf("sentence %q lacks %q", r.Sentence, p)
				}
			}
		})
	}
}

func TestEvaluatePlanUnknowns(t *testing.T) {
	s := PlanSpec{Name: "hs", Target: "/d", NumLayers: 32, Hidden: 4096, DType: "float16", ElemBytes: 2, AllLayers: true}
	free := uint64(1e12)
	r := EvaluatePlan(s, &free, "/d", "")
	if r.Fits != nil {
		t.Errorf("Fits with unknown tokens = %v; want nil", *r.Fits)
	}
	// Not "needs the run's token counts": a run whose engines count tokens but whose log failed lacks its total.
	if !strings.Contains(r.Sentence, "not known yet (tokens: auto projects it once the run's item total, progress and token counts are known") || r.MaxTokens == nil {
		t.Errorf("unknown tokens: %+v", r)
	}
	s.Tokens = 1e6
	r = EvaluatePlan(s, nil, "/d", "")
	if r.Fits != nil || !strings.Contains(r.Sentence, "unknown") {
		t.Errorf("unknown free space: fits %v sentence %q", r.Fits, r.Sentence)
	}
	s.Layers, s.AllLayers = []int{40}, false
	r = EvaluatePlan(s, &free, "/d", "")
	if r.Error == "" || !strings.Contains(r.Error, "out of range") {
		t.Errorf("layer out of range: error %q", r.Error)
	}
}

func TestAnswerFit(t *testing.T) {
	yes, no := true, false
	m := AnswerFit("synth", []PlanResult{{Name: "a", Fits: &yes, Sentence: "a fits"}, {Name: "b", Fits: &no, Sentence: "b does not"}})
	if !strings.Contains(m.Sections[0], "*No*") || len(m.Sections) != 3 {
		t.Errorf("AnswerFit = %+v; want a No verdict first and one line per plan", m)
	}
	if want := "1 of 2 plans does not fit."; !strings.Contains(m.Sections[0], want) {
		t.Errorf("AnswerFit lead = %q; want %q", m.Sections[0], want)
	}
	// One plan: named, not "1 of 1 plans do not fit".
	tests := []struct {
		fits *bool
		want string
	}{
		{&no, "*No* — hs does not fit."},
		{nil, "*Not sure yet* — hs cannot be checked yet."},
	}
	for _, tt := range tests {
		if got := AnswerFit("synth", []PlanResult{{Name: "hs", Fits: tt.fits}}).Sections[0]; !strings.Contains(got, tt.want) {
			t.Errorf("AnswerFit(one plan) lead = %q; want %q", got, tt.want)
		}
	}
	m = AnswerFit("synth", nil)
	if !strings.Contains(m.Sections[0], "no capacity plans") {
		t.Errorf("AnswerFit(none) = %+v", m)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Bytes(21.86e12), "21.9 TB"},
		{Bytes(1.0752e12), "1.08 TB"},
		{Bytes(512e6), "512 MB"},
		{Bytes(999), "999 B"},
		{Duration(45), "45 s"},
		{Duration(12 * 60), "12 min"},
		{Duration(3*3600 + 10*60), "3 h 10 min"},
		{Duration(5 * 3600), "5 h"},
		{Duration(52 * 3600), "2 d 4 h"},
		{Count(25000), "25,000"},
		{Tokens(565000), "565K"},
		{Tokens(25e6), "25M"}, {Tokens(1.08e9), "1.08B"},
		{Rate(1386.2, "tok/s"), "1,386 tok/s"},
		{Rate(0.714, "items/s"), "0.71 items/s"},
		{Percent(0.493), "49%"},
		{Percent(0.001), "under 1%"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}

// A finished job's measured tokens count prompts and completions; the finish summary counts completions only,
// so the plan says both parts and the two figures do not seem to disagree.
func TestEvaluatePlanMeasuredSaysItsParts(t *testing.T) {
	free := uint64(2e15)
	s := PlanSpec{Name: "hs", Target: "/data/hs", Tokens: 32.9e6, TokensSrc: "measured", PromptTokens: 8.7e6,
		Layers: []int{2, 30, 58}, NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}
	if got, want := EvaluatePlan(s, &free, "/data", "").Sentence, "× 32.9M tokens (measured: 8.7M prompt + 24.2M completion) ="; !strings.Contains(got, want) {
		t.Errorf("sentence %q lacks %q", got, want)
	}
	s.PromptTokens = 0 // a log without prompt counts: nothing to split
	if got, want := EvaluatePlan(s, &free, "/data", "").Sentence, "× 32.9M tokens (measured) ="; !strings.Contains(got, want) {
		t.Errorf("sentence %q lacks %q", got, want)
	}
}

// A projected plan's tokens per item are a mean over every item of the job, the ones done at their lengths;
// the ETA's "17,836 items left × 1,031 tokens each" is the items to come. "787-966 completion" beside it
// read as a contradiction: the plan says what its figure is a mean of.
func TestEvaluatePlanProjectedSaysItsMean(t *testing.T) {
	free := uint64(2e15)
	s := PlanSpec{Name: "hs", Target: "/data/hs", Tokens: 28.4e6, TokensSrc: "projected", TokensLow: 25000 * 1138, TokensHigh: 25000 * 1317,
		Items: 25000, PerItemLow: 1138, PerItemHigh: 1317, PromptPerItem: 351,
		Layers: []int{2, 30, 58}, NumLayers: 61, Hidden: 7168, DType: "bfloat16", ElemBytes: 2}
	if got, want := EvaluatePlan(s, &free, "/data", "").Sentence, "25,000 items × 1,138-1,317 tokens (351 prompt + 787-966 completion, averaged over all 25,000 items, those done included) = "; !strings.Contains(got, want) {
		t.Errorf("sentence %q lacks %q", got, want)
	}
	// Both ends of the tokens to the same places: "28.5M-32.9M", and at the seed's moment "29.0M-41.3M", not "29M-41.3M".
	if got, want := EvaluatePlan(s, &free, "/data", "").Sentence, "= 28.4M-32.9M tokens × 43.0 kB"; !strings.Contains(got, want) {
		t.Errorf("sentence %q lacks %q", got, want)
	}
	seed := s
	seed.Tokens, seed.TokensLow, seed.TokensHigh, seed.PerItemLow, seed.PerItemHigh, seed.PromptPerItem = 35e6, 25000*1161, 25000*1652, 1161, 1652, 30
	if got, want := EvaluatePlan(seed, &free, "/data", "").Sentence, "= 29.0M-41.3M tokens × 43.0 kB"; !strings.Contains(got, want) {
		t.Errorf("sentence %q lacks %q", got, want)
	}
	s.PromptPerItem, s.PerItemLow, s.PerItemHigh = 0, 787, 966 // no prompt counts: completions alone
	if got, want := EvaluatePlan(s, &free, "/data", "").Sentence, "25,000 items × 787-966 tokens (completions averaged over all 25,000 items, those done included) = "; !strings.Contains(got, want) {
		t.Errorf("sentence %q lacks %q", got, want)
	}
}

// A projected range whose ends have different units reads as a range, not a subtraction: "989 GB –
// 1.08 TB" (a spaced en dash, as the ETA's "2 h 9 min – 3 h 51 min"), not "989 GB - 1.08 TB".
func TestBytesRangeAcrossUnits(t *testing.T) {
	for _, c := range []struct {
		low, high float64
		want      string
	}{
		{7.59e9, 7.68e9, "7.59-7.68 GB"},
		{989e9, 1.08e12, "989 GB – 1.08 TB"},
	} {
		if got := bytesRange(c.low, c.high); got != c.want {
			t.Errorf("bytesRange(%v, %v) = %q; want %q", c.low, c.high, got, c.want)
		}
	}
}

// TestAnswerFitBrokenPlan: a plan that cannot be checked because of an error (its model config missing) is
// not "not sure yet", which reads as if waiting would settle it; the answer says it cannot tell and why.
func TestAnswerFitBrokenPlan(t *testing.T) {
	broken := PlanResult{Name: "hs", Error: "line 7: runs[0].plans[0].model_config: /nonexist.json does not exist",
		Sentence: "*hs*: cannot read the model config: line 7: runs[0].plans[0].model_config: /nonexist.json does not exist"}
	txt := AnswerFit("synth", []PlanResult{broken}).Text()
	if strings.Contains(txt, "yet") || !strings.Contains(txt, "Cannot tell") || !strings.Contains(txt, "hs cannot be checked: why is below") {
		t.Errorf("fit with a broken plan = %q; want it to say it cannot tell, and why below", txt)
	}
	waiting := PlanResult{Name: "hs", Sentence: "*hs*: tokens: auto needs finished items first."}
	if txt := AnswerFit("synth", []PlanResult{waiting}).Text(); !strings.Contains(txt, "Not sure yet") {
		t.Errorf("fit with a plan waiting for data = %q; want not sure yet", txt)
	}
}

// TestAnswerPlansLeadsWithFinding: "what's the plan?" is not a yes-or-no question; its answer leads with
// what the plans come to, marked as a fit verdict's would be.
func TestAnswerPlansLeadsWithFinding(t *testing.T) {
	yes, no := true, false
	plan := func(name string, fits *bool, err string) PlanResult {
		return PlanResult{Name: name, Fits: fits, Error: err, Sentence: name + " …"}
	}
	tests := []struct {
		plans []PlanResult
		want  string
	}{
		{[]PlanResult{plan("hs", &no, "")}, ":red_circle: *hs does not fit.*"},
		{[]PlanResult{plan("hs", &yes, "")}, ":large_green_circle: *hs fits.*"},
		{[]PlanResult{plan("hs", nil, "")}, ":large_yellow_circle: *hs cannot be checked yet.*"},
		{[]PlanResult{plan("hs", nil, "no model config")}, ":large_yellow_circle: *hs cannot be checked:* why is below."},
		{[]PlanResult{plan("a", &no, ""), plan("b", &no, "")}, ":red_circle: *Neither plan fits.*"},
		{[]PlanResult{plan("a", &no, ""), plan("b", &no, ""), plan("c", &no, "")}, ":red_circle: *None of the 3 plans fits.*"},
		{[]PlanResult{plan("a", &yes, ""), plan("b", &no, "")}, ":red_circle: *1 of 2 plans fits; b does not.*"},
		{[]PlanResult{plan("a", &yes, ""), plan("b", &no, ""), plan("c", &no, "")}, ":red_circle: *1 of 3 plans fits; b and c do not.*"},
		{[]PlanResult{plan("a", &no, ""), plan("b", nil, "")}, ":red_circle: *a does not fit; 1 cannot be checked yet.*"},
		{[]PlanResult{plan("a", &yes, ""), plan("b", &yes, "")}, ":large_green_circle: *Both plans fit.*"},
		{[]PlanResult{plan("a", &yes, ""), plan("b", &yes, ""), plan("c", &yes, "")}, ":large_green_circle: *All 3 plans fit.*"},
		{[]PlanResult{plan("a", &yes, ""), plan("b", nil, "")}, ":large_yellow_circle: *1 of 2 plans fits; 1 cannot be checked yet.*"},
		{[]PlanResult{plan("a", nil, "bad"), plan("b", nil, "bad")}, ":large_yellow_circle: *None of the 2 plans can be checked:* why is below."},
	}
	for _, tt := range tests {
		m := AnswerPlans("synth", tt.plans)
		if len(m.Sections) != 1+len(tt.plans) || m.Sections[0] != tt.want {
			t.Errorf("AnswerPlans(%d plans) = %q; want %q first and one line per plan", len(tt.plans), m.Sections, tt.want)
		}
	}
	if m := AnswerFit("synth", []PlanResult{plan("a", &no, ""), plan("b", &no, "")}); m.Sections[0] != ":red_circle: *No* — 2 of 2 plans do not fit." {
		t.Errorf("AnswerFit lead = %q; want the Yes/No verdict kept for \"will it fit?\"", m.Sections[0])
	}
}

// The largest plan the run file allows takes 80 GB a token: on a disk with 80-160 GB free one token fits,
// and the sentence said "At most 1 tokens fit".
func TestEvaluatePlanOneTokenFits(t *testing.T) {
	s := PlanSpec{Name: "hs", Target: "/data/hs", Tokens: 1e15, TokensSrc: "configured", AllLayers: true,
		NumLayers: 10000, Hidden: 1000000, DType: "float64", ElemBytes: 8}
	tests := []struct {
		free uint64
		want string
	}{
		{79e9, "Not one token fits (80.0 GB per token)."},
		{84e9, "At most 1 token fits (80.0 GB per token)."},
		{200e9, "At most 2 tokens fit."},
	}
	for _, tt := range tests {
		if r := EvaluatePlan(s, &tt.free, "/data", ""); !strings.HasSuffix(r.Sentence, tt.want) {
			t.Errorf("EvaluatePlan(80 GB a token, %d B free).Sentence = %q; want it to end %q", tt.free, r.Sentence, tt.want)
		}
	}
}
