package probes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Model configs in the shape Hugging Face publishes them (config.json), cut to the keys that
// matter here plus a few neighbours: a decoder-only model, a GPT-2 style one, a multimodal one
// whose language model sits in text_config, and one that says dtype instead of torch_dtype.
var modelConfigSamples = []struct {
	name, json string
	want       ModelShape
}{
	{"llama 3.1 8B", `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"intermediate_size":14336,"model_type":"llama",
"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"rope_scaling":{"factor":8.0,"rope_type":"llama3"},
"torch_dtype":"bfloat16","vocab_size":128256}`, ModelShape{NumLayers: 32, HiddenSize: 4096, DType: "bfloat16"}},
	{"gpt2", `{"architectures":["GPT2LMHeadModel"],"n_embd":768,"n_head":12,"n_layer":12,"n_positions":1024,"vocab_size":50257}`,
		ModelShape{NumLayers: 12, HiddenSize: 768}},
	{"multimodal", `{"architectures":["LlavaForConditionalGeneration"],"torch_dtype":"float16","vision_config":{"hidden_size":1024,"num_hidden_layers":24},
"text_config":{"hidden_size":4096,"num_hidden_layers":32,"model_type":"llama"}}`, ModelShape{NumLayers: 32, HiddenSize: 4096, DType: "float16"}},
	{"dtype key", `{"hidden_size":7168,"num_hidden_layers":61,"dtype":"bfloat16","first_k_dense_replace":3}`,
		ModelShape{NumLayers: 61, HiddenSize: 7168, DType: "bfloat16"}},
}

func TestParseModelConfig(t *testing.T) {
	for _, tc := range modelConfigSamples {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseModelConfig(strings.NewReader(tc.json))
			if err != nil || got != tc.want {
				t.Errorf("parseModelConfig(%s) = %+v, %v; want %+v", tc.name, got, err, tc.want)
			}
		})
	}
	bad := []struct{ name, json, want string }{
		{"not JSON", "<html>", "not a JSON model config"},
		{"no layers", `{"hidden_size":4096}`, "no num_hidden_layers"},
		{"negative", `{"hidden_size":-1,"num_hidden_layers":32}`, "no num_hidden_layers"},
		{"wrong type", `{"hidden_size":"4096","num_hidden_layers":32}`, "not a JSON model config"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseModelConfig(strings.NewReader(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseModelConfig(%q) = %v; want an error saying %q", tc.json, err, tc.want)
			}
		})
	}
}

func TestReadModelConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, []byte(modelConfigSamples[0].json), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := ReadModelConfig(ctx, p); err != nil || got.NumLayers != 32 {
		t.Errorf("ReadModelConfig(%s) = %+v, %v; want 32 layers", p, got, err)
	}
	if _, err := ReadModelConfig(ctx, filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadModelConfig(missing) = %v; want ErrNotExist", err)
	}
}

func FuzzParseModelConfig(f *testing.F) {
	for _, s := range modelConfigSamples {
		f.Add([]byte(s.json))
	}
	f.Add([]byte(`{"text_config":{"text_config":{"text_config":{"hidden_size":1,"num_hidden_layers":1}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseModelConfig(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if s.NumLayers <= 0 || s.HiddenSize <= 0 {
			t.Errorf("parseModelConfig(%q) = %+v, nil; want positive layers and hidden size or an error", b, s)
		}
	})
}
