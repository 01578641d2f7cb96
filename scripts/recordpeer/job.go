package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"
)

// job sends a scenario's items to the servers with a fixed number of client workers, retrying failed
// requests, and keeps the counts a job's progress log would show.
type job struct {
	sc      scenario
	urls    []string // one per rank, requests go round-robin by item
	client  *http.Client
	max     []int
	prompts []string
	start   time.Time
	// meter counts the tokens streamed back per address (Stream); nil when requests are not streamed.
	meter *meter

	mu     sync.Mutex
	cond   *sync.Cond
	st     jobState
	finish time.Time
}

func newJob(sc scenario, urls []string, client *http.Client) *job {
	r := rand.New(rand.NewSource(sc.Seed))
	j := &job{sc: sc, urls: urls, client: client}
	j.cond = sync.NewCond(&j.mu)
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly hex " +
		"every jolly zebra pack my box with five dozen liquor jugs")
	for i := 0; i < sc.Items; i++ {
		j.max = append(j.max, sc.MaxTokens(i, sc.Items, r))
		n := 24
		if sc.PromptWords != nil {
			n = sc.PromptWords(i, r)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Item %d. Write about:", i)
		for k := 0; k < n; k++ {
			b.WriteByte(' ')
			b.WriteString(words[r.Intn(len(words))])
		}
		j.prompts = append(j.prompts, b.String())
	}
	j.st.Total = int64(sc.Items)
	j.st.MaxTokens = int64(j.max[0])
	if sc.RunFileMaxTokens > 0 {
		j.st.MaxTokens = int64(sc.RunFileMaxTokens)
	}
	return j
}

// run sends every item and returns when all are done or ctx ends. j.start must be set.
func (j *job) run(ctx context.Context) {
	queue := make(chan int)
	go func() {
		defer close(queue)
		for i := range j.max {
			select {
			case queue <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < j.sc.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if !j.waitTurn(ctx, w) {
					return
				}
				i, ok := <-queue
				if !ok {
					return
				}
				j.item(ctx, i)
			}
		}()
	}
	wg.Wait()
}

// waitTurn holds worker w back until its share of the ramp is done, and, with Clients, while the stretch of
// the job it is in sends with fewer workers than w. false: ctx ended.
func (j *job) waitTurn(ctx context.Context, w int) bool {
	if s := j.sc.StartConcurrency; s > 0 && w >= s {
		need := int64(float64(w-s+1) / float64(j.sc.Concurrency-s) * j.sc.RampUntil * float64(j.sc.Items))
		if !j.waitDone(ctx, need) {
			return false
		}
	}
	if len(j.sc.Clients) == 0 {
		return true
	}
	stop := context.AfterFunc(ctx, func() { j.mu.Lock(); j.cond.Broadcast(); j.mu.Unlock() })
	defer stop()
	j.mu.Lock()
	defer j.mu.Unlock()
	// Once every item is done no worker waits: the queue is empty, and the job's run returns.
	for w >= j.sc.clients(float64(j.st.Done)/float64(j.st.Total)) && j.st.Done < j.st.Total && ctx.Err() == nil {
		j.cond.Wait()
	}
	return ctx.Err() == nil
}

// waitDone blocks until need items are done (true) or ctx ends (false).
func (j *job) waitDone(ctx context.Context, need int64) bool {
	stop := context.AfterFunc(ctx, func() { j.mu.Lock(); j.cond.Broadcast(); j.mu.Unlock() })
	defer stop()
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.st.Done < need && ctx.Err() == nil {
		j.cond.Wait()
	}
	return ctx.Err() == nil
}

// item sends item i until it succeeds, backing off after each failure as a batch job does.
func (j *job) item(ctx context.Context, i int) {
	if j.sc.RunFileMaxTokens == 0 {
		j.mu.Lock()
		j.st.MaxTokens = int64(j.max[i])
		j.mu.Unlock()
	}
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		n, err := j.send(ctx, j.urls[i%len(j.urls)], i)
		j.mu.Lock()
		if err == nil {
			j.st.Done++
			j.st.CompletionSum += float64(n)
			if j.st.Done == j.st.Total {
				j.finish = time.Now()
			}
			j.cond.Broadcast()
			j.mu.Unlock()
			return
		}
		j.st.Errors++
		j.mu.Unlock()
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// send makes one request and returns the completion tokens the server reports.
func (j *job) send(ctx context.Context, base string, i int) (int, error) {
	body := map[string]any{"model": "fake-model", "max_tokens": j.max[i]}
	path := "/v1/completions"
	if j.sc.Chat {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": j.prompts[i]}}
	} else {
		body["prompt"] = j.prompts[i]
	}
	if j.sc.Stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if j.sc.Stream {
		return j.stream(req, base, body)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %s", resp.Status)
	}
	var out struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, fmt.Errorf("decode response: %w", err)
	}
	return out.Usage.CompletionTokens, nil
}

// state is the job's counts now, with elapsed measured from its start.
func (j *job) state(now time.Time) jobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Elapsed = now.Sub(j.start).Seconds()
	return st
}

// finished is when the last item finished (zero until then).
func (j *job) finished() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.finish
}
