package probes

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writtenTestTensor is one tensor of a safetensors file the tests write.
type writtenTestTensor struct {
	name, dtype string
	shape       []int64
}

var writtenTestDTypeBytes = map[string]int64{"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "I32": 4, "BOOL": 1}

// writtenTestSafetensors writes a safetensors file as the format specifies (huggingface/safetensors
// README): an 8-byte little-endian header length, the JSON header padded with spaces to a multiple
// of 8 (as candle and the Python library write it), then the tensors' bytes. The body is a sparse
// zero region, so a large file costs nothing.
func writtenTestSafetensors(t testing.TB, path string, tensors []writtenTestTensor, mod time.Time) int64 {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, tt := range tensors {
		n := writtenTestDTypeBytes[tt.dtype]
		for _, d := range tt.shape {
			n *= d
		}
		header[tt.name] = map[string]any{"dtype": tt.dtype, "shape": tt.shape, "data_offsets": []int64{off, off + n}}
		off += n
	}
	js, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(js)))
	buf.Write(js)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(buf.Len()) + off
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
	return size
}

func TestReadSafetensorsHeaderVectors(t *testing.T) {
	tests := []struct {
		name string
		blob string
		want map[string]safetensorsTensor
	}{
		// huggingface/safetensors, safetensors/src/tensor.rs doc example (SafeTensors::deserialize).
		{"huggingface", "<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}" + string(make([]byte, 16)),
			map[string]safetensorsTensor{"test": {DType: "I32", Shape: []int64{2, 2}, Offsets: []int64{0, 16}}}},
		// candle's save_single_tensor test: header padded with spaces to 64 bytes.
		{"candle", "@\x00\x00\x00\x00\x00\x00\x00{\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}       " + string(make([]byte, 16)),
			map[string]safetensorsTensor{"t": {DType: "F32", Shape: []int64{2, 2}, Offsets: []int64{0, 16}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readSafetensorsHeader(bytes.NewReader([]byte(tt.blob)))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("header = %v; want %v", got, tt.want)
			}
		})
	}
	for name, blob := range map[string]string{
		"empty":     "",
		"too long":  "\xff\xff\xff\xff\x00\x00\x00\x00{}",
		"truncated": "\x10\x00\x00\x00\x00\x00\x00\x00{\"t\":",
		"not json":  "\x08\x00\x00\x00\x00\x00\x00\x00notjson!",
	} {
		if _, err := readSafetensorsHeader(bytes.NewReader([]byte(blob))); err == nil {
			t.Errorf("readSafetensorsHeader(%s) = nil error; want one", name)
		}
	}
}

func TestScanWritten(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var stBytes int64
	// EAGLE-3 style training samples: input_ids and three layers' hidden states of a 7168-wide model.
	for i, seq := range []int64{512, 1024, 2048, 300} {
		stBytes += writtenTestSafetensors(t, filepath.Join(dir, fmt.Sprintf("shard-%d", i%2), fmt.Sprintf("req-%04d.safetensors", i)), []writtenTestTensor{
			{"input_ids", "I64", []int64{seq}},
			{"hidden_states", "BF16", []int64{seq, 3 * 7168}},
			{"loss_mask", "BOOL", []int64{seq}},
		}, t0.Add(time.Duration(i)*time.Minute))
	}
	// A file named like a header of the other form: [layers, seq, hidden] without input_ids.
	stBytes += writtenTestSafetensors(t, filepath.Join(dir, "req-0004.safetensors"), []writtenTestTensor{
		{"hidden_states", "BF16", []int64{3, 100, 7168}},
	}, t0.Add(4*time.Minute))
	// A file still being written: its header is not there yet.
	if err := os.WriteFile(filepath.Join(dir, "req-0005.safetensors"), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	stBytes += 3
	if err := os.WriteFile(filepath.Join(dir, "index.jsonl"), []byte("{\"id\":0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	w, err := ScanWritten(context.Background(), dir, WrittenLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Files != 7 || w.Safetensors != 6 || w.SafetensorsBytes != stBytes || w.Bytes != stBytes+9 || w.HeadersRead != 5 || w.Truncated {
		t.Errorf("Written = %+v; want 7 files, 6 safetensors of %d bytes, 5 headers read", w, stBytes)
	}
	// Tokens: 512+1024+2048+300+100 in the files whose header was read, extrapolated by bytes over
	// the 3-byte file too.
	read := float64(stBytes - 3)
	if want := 3984.0 * float64(stBytes) / read; w.TokensInFiles != want {
		t.Errorf("TokensInFiles = %v; want %v", w.TokensInFiles, want)
	}

	// Limits: two headers (the newest), one level deep, and a file cap.
	w, err = ScanWritten(context.Background(), dir, WrittenLimits{Headers: 2, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w.Files != 3 || !w.Truncated || w.HeadersRead != 1 || w.Cut != "directories below the top not read" {
		t.Errorf("depth 1 = %+v; want the 3 top-level files, truncated by depth, the one readable header", w)
	}
	w, _ = ScanWritten(context.Background(), dir, WrittenLimits{Files: 2})
	if w.Files != 2 || !w.Truncated || w.Cut != "at the 2-file limit" {
		t.Errorf("files 2 = %+v; want 2 files and truncated at the file limit", w)
	}
	if _, err := ScanWritten(context.Background(), filepath.Join(dir, "nope"), WrittenLimits{}); err == nil {
		t.Error("ScanWritten of a missing directory = nil error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewGuard().Written(ctx, dir, WrittenLimits{}); err == nil {
		t.Error("Written with a cancelled ctx = nil error")
	}
}
