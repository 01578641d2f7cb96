package reports

import (
	"fmt"
	"math"
	"strings"
)

// PlanSpec is a capacity plan with its model shape filled in.
type PlanSpec struct {
	Name      string
	Target    string
	Tokens    float64 // 0 when unknown (tokens: auto before the run has reported any)
	TokensSrc string  // "configured", "measured" or "projected"
	// TokensLow and TokensHigh are a projection's range (0 when it has none): Items × PerItemLow to
	// PerItemHigh tokens. The fit verdict uses the high figure.
	TokensLow, TokensHigh   float64
	Items                   float64
	PerItemLow, PerItemHigh float64
	PromptPerItem           float64 // the prompt part of PerItemLow and PerItemHigh (0 when none or unknown)
	PromptTokens            float64 // the prompt part of a measured Tokens (0 when none or unknown)
	AllLayers               bool
	Layers                  []int
	NumLayers               int
	Hidden                  int
	DType                   string
	ElemBytes               int
	// ModelSrc says where the shape came from: a config.json path or "run file".
	ModelSrc string
	// FreeErr is why the target's free space is unknown, when it is: its statfs failed or did not
	// answer. The verdict is then "can't tell", naming it, never "not sure yet".
	FreeErr string
	// TokensErr is why `tokens: auto` has no projection, when its progress sources failed ("no
	// progress reading: `log /x` failed"): "can't tell" too, not waiting for data.
	TokensErr string
}

// PlanResult is the answer to "will it fit?" for one plan.
type PlanResult struct {
	Name          string   `json:"name"`
	Target        string   `json:"target"`
	Mount         string   `json:"mount"`
	Host          string   `json:"host,omitempty"`
	BytesNeeded   float64  `json:"bytes_needed"`
	FreeBytes     *uint64  `json:"free_bytes"`
	Fits          *bool    `json:"fits"`
	MaxTokens     *float64 `json:"max_tokens"`
	Tokens        float64  `json:"tokens"`
	TokensSource  string   `json:"tokens_source"`
	TokensLow     float64  `json:"tokens_low,omitempty"`  // a projection's range
	TokensHigh    float64  `json:"tokens_high,omitempty"` // the figure the fit verdict used
	BytesLow      float64  `json:"bytes_low,omitempty"`
	BytesHigh     float64  `json:"bytes_high,omitempty"`
	Layers        int      `json:"layers"`
	HiddenSize    int      `json:"hidden_size"`
	BytesPerElem  int      `json:"bytes_per_element"`
	BytesPerToken float64  `json:"bytes_per_token"`
	Sentence      string   `json:"sentence"` // mrkdwn
	Error         string   `json:"error,omitempty"`
	// FreeError is why the target's free space is unknown (PlanSpec.FreeErr).
	FreeError string `json:"free_error,omitempty"`
	// TokensError is why the token count could not be projected (PlanSpec.TokensErr).
	TokensError string `json:"tokens_error,omitempty"`
}

// CapturedLayers is how many layers' hidden states the plan stores.
func (s PlanSpec) CapturedLayers() int {
	if s.AllLayers || len(s.Layers) == 0 {
		return s.NumLayers
	}
	return len(s.Layers)
}

// EvaluatePlan works out bytes needed = tokens x captured layers x hidden size x bytes per element,
// and compares it with the free space of the target's mount.
func EvaluatePlan(s PlanSpec, free *uint64, mount, host string) PlanResult {
	layers := s.CapturedLayers()
	perToken := float64(layers) * float64(s.Hidden) * float64(s.ElemBytes)
	r := PlanResult{
		Name: s.Name, Target: s.Target, Mount: mount, Host: host, FreeBytes: free,
		Tokens: s.Tokens, TokensSource: s.TokensSrc, Layers: layers, HiddenSize: s.Hidden,
		BytesPerElem: s.ElemBytes, BytesPerToken: perToken, BytesNeeded: s.Tokens * perToken,
	}
	if free == nil {
		r.FreeError = s.FreeErr
	}
	if s.Tokens <= 0 {
		r.TokensError = s.TokensErr
	}
	ranged := s.TokensHigh > s.TokensLow && s.TokensLow > 0
	if ranged {
		r.TokensLow, r.TokensHigh = s.TokensLow, s.TokensHigh
		r.BytesLow, r.BytesHigh = s.TokensLow*perToken, s.TokensHigh*perToken
	}
	for _, l := range s.Layers {
		if s.NumLayers > 0 && l >= s.NumLayers {
			r.Error = fmt.Sprintf("layer %d is out of range: the model has %d layers (0-%d)", l, s.NumLayers, s.NumLayers-1)
			r.Sentence = fmt.Sprintf("%s: %s.", Esc(s.Name), r.Error)
			return r
		}
	}
	if free != nil && perToken > 0 {
		mt := math.Floor(float64(*free) / perToken)
		r.MaxTokens = &mt
	}
	if free != nil && s.Tokens > 0 {
		need := r.BytesNeeded
		if ranged {
			need = r.BytesHigh // a projection fits only if its high figure does
		}
		fits := need <= float64(*free)
		r.Fits = &fits
	}
	r.Sentence = planSentence(s, r)
	return r
}

func layerPhrase(s PlanSpec) string {
	if s.AllLayers || len(s.Layers) == 0 {
		return fmt.Sprintf("all %s layers", Count(float64(s.NumLayers)))
	}
	idx := make([]string, len(s.Layers))
	for i, l := range s.Layers {
		idx[i] = fmt.Sprint(l)
	}
	return fmt.Sprintf("%s of %s layers (%s)", Count(float64(len(s.Layers))), Count(float64(s.NumLayers)), strings.Join(idx, ", "))
}

func planSentence(s PlanSpec, r PlanResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s*: ", Esc(s.Name))
	if s.Tokens <= 0 && r.TokensError != "" {
		fmt.Fprintf(&b, "%s × %s × %d B (%s) = %s per token; the token count cannot be projected: %s.",
			layerPhrase(s), Count(float64(s.Hidden)), s.ElemBytes, Esc(s.DType), Bytes(r.BytesPerToken), r.TokensError)
		if r.MaxTokens != nil {
			fmt.Fprintf(&b, " %s has room for %s tokens.", Code(r.Mount), Tokens(*r.MaxTokens))
		}
		return b.String()
	}
	if s.Tokens <= 0 {
		fmt.Fprintf(&b, "%s × %s × %d B (%s) = %s per token; the token count is not known yet (tokens: auto projects it once the run's item total, progress and token counts are known and 1%% of the items are done).",
			layerPhrase(s), Count(float64(s.Hidden)), s.ElemBytes, Esc(s.DType), Bytes(r.BytesPerToken))
		if r.MaxTokens != nil {
			fmt.Fprintf(&b, " %s has room for %s tokens.", Code(r.Mount), Tokens(*r.MaxTokens))
		}
		return b.String()
	}
	tokSrc := ""
	if s.TokensSrc == "configured" {
		// Beside a plan projected from the run, a fixed count reads as a contradiction unless it says whose it is.
		tokSrc = " (set in the run file)"
	} else if s.TokensSrc == "projected" {
		tokSrc = " (projected from the run)"
	} else if s.TokensSrc == "measured" {
		tokSrc = " (measured)"
		if s.PromptTokens >= 0.5 && s.PromptTokens < s.Tokens {
			// "32.9M tokens" beside a finish that says "24.2M tokens": the plan counts the prompts too.
			tokSrc = fmt.Sprintf(" (measured: %s prompt + %s completion)", Tokens(s.PromptTokens), Tokens(s.Tokens-s.PromptTokens))
		}
	}
	ranged := r.TokensHigh > r.TokensLow && r.TokensLow > 0
	need := r.BytesNeeded
	if ranged {
		// "25-36 TB projected (25,000 items × 1,131-1,650 tokens × 874 KB)": the range, how it was made, and
		// which figure the verdict used.
		need = r.BytesHigh
		// Hidden states cover whole sequences: say the prompt's part, so that the tokens per item do not seem
		// to contradict the completion lengths the ETA shows ("1,161-1,652 tokens" beside "completions
		// 1,131-1,622"). And say what the completions are a mean of: every item of the job, the ones done at
		// their lengths; the ETA's "17,836 items left × 1,031 tokens each" is the items to come alone, and
		// "787-966 completion" beside it read as a contradiction.
		over := fmt.Sprintf("averaged over all %s items, those done included", Count(s.Items))
		perItem := Count(s.PerItemLow) + "-" + Count(s.PerItemHigh) + " tokens"
		if s.PromptPerItem >= 0.5 {
			perItem += fmt.Sprintf(" (%s prompt + %s-%s completion, %s)", Count(s.PromptPerItem),
				Count(s.PerItemLow-s.PromptPerItem), Count(s.PerItemHigh-s.PromptPerItem), over)
		} else {
			perItem += fmt.Sprintf(" (completions %s)", over)
		}
		fmt.Fprintf(&b, "%s × %s × %d B (%s) = %s per token; *%s* projected (%s items × %s = %s tokens × %s), the verdict at the high figure",
			layerPhrase(s), Count(float64(s.Hidden)), s.ElemBytes, Esc(s.DType), Bytes(r.BytesPerToken),
			bytesRange(r.BytesLow, r.BytesHigh), Count(s.Items), perItem, TokensRange(r.TokensLow, r.TokensHigh),
			Bytes(r.BytesPerToken))
	} else {
		fmt.Fprintf(&b, "%s × %s × %d B (%s) × %s tokens%s = *%s*",
			layerPhrase(s), Count(float64(s.Hidden)), s.ElemBytes, Esc(s.DType), Tokens(s.Tokens), tokSrc, Bytes(r.BytesNeeded))
	}
	where := Code(r.Mount) + onHost(r.Host)
	switch {
	case r.FreeBytes == nil && r.FreeError != "":
		fmt.Fprintf(&b, "; free space on %s is unknown: %s.", where, Esc(r.FreeError))
	case r.FreeBytes == nil:
		fmt.Fprintf(&b, "; free space on %s is unknown.", where)
	case *r.Fits:
		spare := float64(*r.FreeBytes) - need
		fmt.Fprintf(&b, " — :large_green_circle: fits: %s has %s free, %s (%s) to spare.",
			where, Bytes(float64(*r.FreeBytes)), Bytes(spare), Percent(spare/float64(*r.FreeBytes)))
	default:
		short := need - float64(*r.FreeBytes)
		fmt.Fprintf(&b, " — :red_circle: does not fit: %s has %s free, %s short. ", where, Bytes(float64(*r.FreeBytes)), Bytes(short))
		switch {
		case *r.MaxTokens < 1:
			fmt.Fprintf(&b, "Not one token fits (%s per token)", Bytes(r.BytesPerToken))
		case *r.MaxTokens < 2:
			fmt.Fprintf(&b, "At most 1 token fits (%s per token)", Bytes(r.BytesPerToken))
		default:
			fmt.Fprintf(&b, "At most %s tokens fit", Tokens(*r.MaxTokens))
		}
		if s.NumLayers > 0 && s.Hidden > 0 && s.ElemBytes > 0 {
			perLayer := s.Tokens * float64(s.Hidden) * float64(s.ElemBytes)
			if n := int(float64(*r.FreeBytes) / perLayer); n > 0 && n < r.Layers {
				fmt.Fprintf(&b, ", or %s layers at this token count", Count(float64(n)))
			}
		}
		b.WriteString(".")
	}
	return b.String()
}

// bytesRange is "25-36 TB": two sizes sharing a unit say it once; across units it is "989 GB – 1.08 TB",
// a spaced en dash as in the ETA's range, since "989 GB - 1.08 TB" reads as a subtraction.
func bytesRange(low, high float64) string {
	l, h := Bytes(low), Bytes(high)
	if i, j := strings.LastIndexByte(l, ' '), strings.LastIndexByte(h, ' '); i > 0 && j > 0 && l[i:] == h[j:] {
		return l[:i] + "-" + h
	}
	return l + " – " + h
}

// AnswerFit answers "will it fit?" with every plan of the run: a Yes or No first, then each plan.
func AnswerFit(run string, plans []PlanResult) Message { return answerPlans(run, plans, fitVerdict) }

// AnswerPlans answers "what's the plan?" and "capacity?" with every plan of the run: what was found
// first ("Neither plan fits", "1 of 2 plans fits; all-layers does not"), then each plan. A Yes or No
// would answer a question nobody asked.
func AnswerPlans(run string, plans []PlanResult) Message { return answerPlans(run, plans, planFinding) }

// planCount is how the plans stand: how many fit, do not, cannot be checked, and of those how many
// failed (their entry, model config or reading it) rather than wait for data.
type planCount struct {
	all, yes, no, unknown, broken int
	notFit                        []string // the names of the plans that do not fit
}

func answerPlans(run string, plans []PlanResult, lead func([]PlanResult, planCount) string) Message {
	m := Message{Title: fmt.Sprintf("%s · capacity plans", run)}
	if len(plans) == 0 {
		m.Sections = append(m.Sections, fmt.Sprintf("Run %s has no capacity plans. Add `plans:` to the run file, e.g. hidden states: "+
			"`{name: hidden-states, target: /data/hs, tokens: 25M, model_config: /models/x/config.json, layers: [2, 30, 58]}`.", Esc(run)))
		return m
	}
	c := planCount{all: len(plans)}
	for _, p := range plans {
		switch {
		case p.Fits == nil:
			c.unknown++
			// A plan whose entry failed, or whose target's free space could not be read, cannot be
			// checked for a reason: it is not waiting for data.
			if p.Error != "" || p.FreeError != "" || p.TokensError != "" {
				c.broken++
			}
		case !*p.Fits:
			c.no++
			c.notFit = append(c.notFit, Esc(p.Name))
		default:
			c.yes++
		}
	}
	m.Sections = append(m.Sections, lead(plans, c))
	for _, p := range plans {
		m.Sections = append(m.Sections, p.Sentence)
	}
	return m
}

// fitVerdict is the Yes or No that leads an answer to "will it fit?".
func fitVerdict(plans []PlanResult, c planCount) string {
	switch {
	case c.no > 0 && c.all == 1:
		// Not "1 of 1 plans do not fit".
		return fmt.Sprintf(":red_circle: *No* — %s does not fit.", Esc(plans[0].Name))
	case c.no == 1:
		return fmt.Sprintf(":red_circle: *No* — 1 of %d plans does not fit.", c.all)
	case c.no > 0:
		return fmt.Sprintf(":red_circle: *No* — %d of %d plans do not fit.", c.no, c.all)
	case c.broken > 0 && c.all == 1:
		return fmt.Sprintf(":large_yellow_circle: *Cannot tell* — %s cannot be checked: why is below.", Esc(plans[0].Name))
	case c.broken == c.unknown && c.unknown > 0:
		return fmt.Sprintf(":large_yellow_circle: *Cannot tell* — %d of %d plans cannot be checked: why is below.", c.unknown, c.all)
	case c.unknown > 0 && c.all == 1:
		return fmt.Sprintf(":large_yellow_circle: *Not sure yet* — %s cannot be checked yet.", Esc(plans[0].Name))
	case c.unknown > 0:
		return fmt.Sprintf(":large_yellow_circle: *Not sure yet* — %d of %d plans cannot be checked yet.", c.unknown, c.all)
	}
	return ":large_green_circle: *Yes* — every plan fits."
}

// planFinding is what the plans come to, leading an answer to "what's the plan?" or "capacity?".
func planFinding(plans []PlanResult, c planCount) string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	unchecked := ""
	if c.unknown > 0 {
		why := "yet"
		if c.broken == c.unknown {
			why = "(why is below)"
		}
		unchecked = fmt.Sprintf("; %d cannot be checked %s", c.unknown, why)
	}
	switch {
	case c.all == 1 && c.no == 1:
		return fmt.Sprintf(":red_circle: *%s does not fit.*", c.notFit[0])
	case c.all == 1 && c.yes == 1:
		return fmt.Sprintf(":large_green_circle: *%s fits.*", Esc(plans[0].Name))
	case c.all == 1 && c.broken == 1:
		return fmt.Sprintf(":large_yellow_circle: *%s cannot be checked:* why is below.", Esc(plans[0].Name))
	case c.all == 1:
		return fmt.Sprintf(":large_yellow_circle: *%s cannot be checked yet.*", Esc(plans[0].Name))
	case c.no == c.all && c.all == 2:
		return ":red_circle: *Neither plan fits.*"
	case c.no == c.all:
		return fmt.Sprintf(":red_circle: *None of the %d plans fits.*", c.all)
	case c.no > 0 && c.yes == 0:
		return fmt.Sprintf(":red_circle: *%s %s not fit%s.*", joinAnd(c.notFit), plural(c.no, "does", "do"), unchecked)
	case c.no > 0:
		return fmt.Sprintf(":red_circle: *%d of %d plans %s; %s %s not%s.*", c.yes, c.all, plural(c.yes, "fits", "fit"),
			joinAnd(c.notFit), plural(c.no, "does", "do"), unchecked)
	case c.yes == c.all && c.all == 2:
		return ":large_green_circle: *Both plans fit.*"
	case c.yes == c.all:
		return fmt.Sprintf(":large_green_circle: *All %d plans fit.*", c.all)
	case c.yes == 0 && c.broken == c.unknown:
		return fmt.Sprintf(":large_yellow_circle: *None of the %d plans can be checked:* why is below.", c.all)
	case c.yes == 0:
		return fmt.Sprintf(":large_yellow_circle: *None of the %d plans can be checked yet.*", c.all)
	}
	return fmt.Sprintf(":large_yellow_circle: *%d of %d plans %s%s.*", c.yes, c.all, plural(c.yes, "fits", "fit"), unchecked)
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
