package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ModelShape is what a capacity plan needs from a model's config.json.
type ModelShape struct {
	NumLayers  int
	HiddenSize int
	DType      string // torch_dtype or dtype, e.g. bfloat16; "" when the config does not say
}

// maxModelConfig bounds how much of a config.json is read; real ones are a few KiB.
const maxModelConfig = 4 << 20

// ReadModelConfig reads a Hugging Face config.json. The read runs where ctx can abandon it, since
// model directories often live on network filesystems.
func ReadModelConfig(ctx context.Context, path string) (ModelShape, error) {
	return NewGuard().ReadModelConfig(ctx, path)
}

// readModelConfig is ReadModelConfig without the ctx guard.
func readModelConfig(path string) (ModelShape, error) {
	f, err := os.Open(path)
	if err != nil {
		return ModelShape{}, fmt.Errorf("read model config: %w", err)
	}
	defer f.Close()
	s, err := parseModelConfig(io.LimitReader(f, maxModelConfig))
	if err != nil {
		err = fmt.Errorf("read model config %s: %w", path, err)
	}
	return s, err
}

type modelConfigJSON struct {
	NumHiddenLayers *int             `json:"num_hidden_layers"`
	NLayer          *int             `json:"n_layer"`
	HiddenSize      *int             `json:"hidden_size"`
	NEmbd           *int             `json:"n_embd"`
	TorchDType      string           `json:"torch_dtype"`
	DType           string           `json:"dtype"`
	TextConfig      *modelConfigJSON `json:"text_config"`
}

// parseModelConfig reads num_hidden_layers, hidden_size and the dtype, looking inside text_config
// (multimodal models) for anything missing at the top level.
func parseModelConfig(r io.Reader) (ModelShape, error) {
	var c modelConfigJSON
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return ModelShape{}, fmt.Errorf("not a JSON model config: %w", err)
	}
	var s ModelShape
	for cur := &c; cur != nil; cur = cur.TextConfig {
		if s.NumLayers == 0 {
			s.NumLayers = firstInt(cur.NumHiddenLayers, cur.NLayer)
		}
		if s.HiddenSize == 0 {
			s.HiddenSize = firstInt(cur.HiddenSize, cur.NEmbd)
		}
		if s.DType == "" {
			s.DType = cur.TorchDType
			if s.DType == "" {
				s.DType = cur.DType
			}
		}
	}
	if s.NumLayers <= 0 || s.HiddenSize <= 0 {
		return s, errors.New("no num_hidden_layers and hidden_size (at the top level or in text_config)")
	}
	return s, nil
}

func firstInt(ps ...*int) int {
	for _, p := range ps {
		if p != nil && *p > 0 {
			return *p
		}
	}
	return 0
}
