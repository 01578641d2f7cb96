package reports

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func obsF(v float64) *float64 { return &v }

func TestParseObservation(t *testing.T) {
	tests := []struct {
		line string
		want Observation
	}{
		{`{"t":0,"done":0}`, Observation{}},
		{`{"t":60,"done":96,"total":25000}`, Observation{T: 60, Done: 96, Total: 25000}},
		{
			`{"t":1.7e9,"done":300,"total":25000,"errors":2,"gen_tokens":565000.5,"running":200,"waiting":56,` +
				`"avg_completion":1066,"elapsed":408,"finished_len_sum":319800,"finished_len_count":300,` +
				`"length_capped":3,"max_tokens":4096,"restarts":1}`,
			Observation{T: 1.7e9, Done: 300, Total: 25000, Errors: 2, GenTokens: obsF(565000.5), Running: obsF(200),
				Waiting: obsF(56), AvgCompletion: obsF(1066), Elapsed: obsF(408), FinishedLenSum: obsF(319800),
				FinishedLenCount: obsF(300), LengthCapped: obsF(3), MaxTokens: 4096, Restarts: 1},
		},
		{`{"t":5,"done":1,"gen_tokens":null}`, Observation{T: 5, Done: 1}},
		{` { "done" : 3 , "t" : 2 } `, Observation{T: 2, Done: 3}},
		{`{"t":5,"done":7,"total":0}`, Observation{T: 5, Done: 7}}, // total unknown: any done
	}
	for _, tt := range tests {
		got, err := ParseObservation([]byte(tt.line))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseObservation(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
}

func TestParseObservationErrors(t *testing.T) {
	tests := []struct {
		line, want string // want: a piece of the error message
	}{
		{``, "parse observation"},
		{`[]`, "parse observation"},
		{`{"t":1}`, "missing field done"},
		{`{"done":1}`, "missing field t"},
		{`{"t":1,"done":1,"eta":5}`, `unknown field "eta"`},
		{`{"t":1,"done":-1}`, "done is negative"},
		{`{"t":1,"done":1,"total":-5}`, "total is negative"},
		{`{"t":-1,"done":1}`, "t is negative"},
		{`{"t":1,"done":1,"gen_tokens":-3}`, "gen_tokens is negative"},
		{`{"t":1,"done":11,"total":10}`, "done 11 is greater than total 10"},
		{`{"t":1,"done":1,"running":1e999}`, "running: 1e999 is not a finite number"},
		{`{"t":1,"done":1.5}`, "done: 1.5 is not an integer"},
		{`{"t":1,"done":"3"}`, `done: "3" is not an integer`},
		{`{"t":"1","done":3}`, `t: "1" is not a finite number`},
		{`{"t":1,"done":3,"elapsed":true}`, "elapsed: true is not a finite number"},
		{`{"t":1,"done":1} {"t":2,"done":2}`, "unexpected data after the object"},
		{`{"t":1,"done":1`, "parse observation"},
		{`{"t":1,"done":99999999999999999999}`, "done: 99999999999999999999 is not an integer"},
	}
	for _, tt := range tests {
		_, err := ParseObservation([]byte(tt.line))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseObservation(%q) error = %v; want one containing %q", tt.line, err, tt.want)
		}
	}
}

// FuzzParseObservation checks that any input parses or fails cleanly, and that what parses survives a round
// trip through JSON.
func FuzzParseObservation(f *testing.F) {
	file, err := os.Open("testdata/trace_length_drift.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for n := 0; sc.Scan() && n < 20; n++ {
		f.Add(append([]byte(nil), sc.Bytes()...))
	}
	f.Add([]byte(`{"t":1,"done":1,"restarts":2,"gen_tokens":null}`))
	f.Add([]byte(`{"t":1e308,"done":9223372036854775807}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		o, err := ParseObservation(line)
		if err != nil {
			return
		}
		again, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("Marshal(ParseObservation(%q)) error: %v", line, err)
		}
		o2, err := ParseObservation(again)
		if err != nil || !reflect.DeepEqual(o, o2) {
			t.Fatalf("ParseObservation(%q) = %+v; after a round trip %+v, %v", line, o, o2, err)
		}
	})
}
