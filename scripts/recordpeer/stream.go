package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// meter counts, per server address, the tokens streamed back to every client of it (the job's and a
// neighbour's) since the server at that address last started: what vLLM's generation-token counter holds,
// which grows as tokens are decoded, where the simulator's own grows only when a request finishes. A
// recording with Stream writes a second trace with this count as its token counter (see perIteration).
type meter struct {
	mu    sync.Mutex
	count map[string]float64
	life  map[string]int // bumped when the server at the address restarts: a stream from before adds nothing
}

func newMeter() *meter { return &meter{count: map[string]float64{}, life: map[string]int{}} }

// lifetime is the address's current server lifetime, for a stream to tag its tokens with.
func (m *meter) lifetime(addr string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.life[addr]
}

// add counts n tokens streamed from addr during lifetime life (nothing when the server has restarted since).
func (m *meter) add(addr string, life int, n float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.life[addr] == life {
		m.count[addr] += n
	}
}

// restart starts addr's count again from zero, as a restarted server's counter does.
func (m *meter) restart(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.life[addr]++
	m.count[addr] = 0
}

// read is addr's count now.
func (m *meter) read(addr string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count[addr]
}

// streamChunk is one server-sent event of a streamed completion: a token's text (completions or chat), or,
// last, the usage.
type streamChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// stream sends a streamed request to base and counts its tokens as they arrive in j.meter; at the end the
// count is brought to the usage the server reports (a token whose text is empty is still a token). It returns
// the completion tokens.
func (j *job) stream(req *http.Request, base string, _ map[string]any) (int, error) {
	life := j.meter.lifetime(base)
	resp, err := j.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %s", resp.Status)
	}
	counted, usage := 0, -1
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		var c streamChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return 0, fmt.Errorf("decode stream: %w", err)
		}
		if c.Usage != nil {
			usage = c.Usage.CompletionTokens
		}
		for _, ch := range c.Choices {
			if ch.Text != "" || ch.Delta.Content != "" {
				counted++
				j.meter.add(base, life, 1)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if usage < 0 {
		return 0, fmt.Errorf("stream ended without usage")
	}
	j.meter.add(base, life, float64(usage-counted))
	return usage, nil
}
