package monitor

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"runwatch/config"
	"runwatch/reports"
)

// writeHiddenStates writes one request's hidden states as a safetensors file (8-byte little-endian
// header length, space-padded JSON header, tensor bytes as a sparse zero region): input ids and
// three layers of a 7168-wide bf16 model, as an EAGLE-3 data job writes them.
func writeHiddenStates(t *testing.T, path string, seq int64) {
	t.Helper()
	ids, hs := seq*8, seq*3*7168*2
	header, err := json.Marshal(map[string]any{
		"input_ids":     map[string]any{"dtype": "I64", "shape": []int64{seq}, "data_offsets": []int64{0, ids}},
		"hidden_states": map[string]any{"dtype": "BF16", "shape": []int64{seq, 3 * 7168}, "data_offsets": []int64{ids, ids + hs}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.Write(header)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(b.Len())+ids+hs); err != nil {
		t.Fatal(err)
	}
}

// plansStatus is synth's status with its plans measured, from a fresh monitor over the run file.
func plansStatus(t *testing.T, file *config.File) reports.RunStatus {
	t.Helper()
	m, _, err := New(file, Options{ProbeTimeout: 5 * time.Second, RateWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := m.RunStatus(context.Background(), "synth", Need{Plans: true, Progress: true})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestMeasuredPlansFromWrittenFiles(t *testing.T) {
	f := newFixture(t)
	for i, seq := range []int64{900, 1100, 1024, 2000} {
		writeHiddenStates(t, filepath.Join(f.out, fmt.Sprintf("req-%05d.safetensors", i)), seq)
	}
	rs := plansStatus(t, f.file)
	if len(rs.Measured) != 2 {
		t.Fatalf("measured = %+v; want both plans", rs.Measured)
	}
	three, all := reports.MeasuredFor(rs.Measured, "three"), reports.MeasuredFor(rs.Measured, "all")
	if three == nil || all == nil || three.Tokens != 5024 || three.TokensSource != "safetensors headers" {
		t.Fatalf("measured = %+v", rs.Measured)
	}
	if three.Disagree || !all.Disagree {
		t.Errorf("disagree: three %v, all %v; want the 61-layer plan to disagree with files of 3 layers", three.Disagree, all.Disagree)
	}
	text := reports.RenderStatus(rs, time.Now(), time.UTC).Text()
	for _, want := range []string{"Measured: " + f.out + " holds 216 MB in 4 files, 5,024 tokens by the safetensors headers", "the files hold 20.3× less"} {
		if !strings.Contains(text, want) {
			t.Errorf("status = %s\nwant %q in it", text, want)
		}
	}
}

// A scan cut short says why once, beside the count the sentence already gives: "(scanned 4 files, …)" after
// "holds 216 MB in 4 files" said the count twice.
func TestMeasuredPlansPartialScan(t *testing.T) {
	f := newFixture(t)
	deep := filepath.Join(f.out, "a", "b", "c", "d", "e")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	writeHiddenStates(t, filepath.Join(f.out, "req-00000.safetensors"), 900)
	writeHiddenStates(t, filepath.Join(deep, "req-00001.safetensors"), 1100)
	rs := plansStatus(t, f.file)
	three := reports.MeasuredFor(rs.Measured, "three")
	if three == nil {
		t.Fatalf("measured = %+v; want the plan measured", rs.Measured)
	}
	if want := "_(a partial scan: directories over 4 levels deep not read)_"; !strings.Contains(three.Sentence, want) || strings.Contains(three.Sentence, "scanned") {
		t.Errorf("sentence = %q; want %q and the file count said once", three.Sentence, want)
	}
}
