package conversation

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"runwatch/config"
)

// TestRedactLogLineCommonShapes: credentials the way jobs and their wrappers print them, beyond
// NAME=value: a command line's --api-key VALUE, a config dumped as JSON or YAML, an Authorization
// header with basic credentials, and the key shapes of OpenAI-style APIs, GitHub and AWS. The
// numbers around them, "tokens" included, stay.
func TestRedactLogLineCommonShapes(t *testing.T) {
	tests := []struct {
		line   string
		secret string
		keep   []string
	}{
		{"exec python gen.py --api-key sk-proj-AbCdEf0123456789abcdefXYZ --max-tokens 2048", "AbCdEf0123", []string{"gen.py", "--max-tokens 2048"}},
		{"args: --hf_token s3cr3tHFvalue99 --batch 8", "s3cr3tHFvalue99", []string{"--batch 8"}},
		{`config: {"openai_api_key": "Sekr3tValue0001", "max_tokens": 4096}`, "Sekr3tValue0001", []string{`"max_tokens": 4096`}},
		{"  wandb_key: Sekr3tValue0002", "Sekr3tValue0002", nil},
		{"{'password': 'Sekr3tValue0003', 'tokens': 1066}", "Sekr3tValue0003", []string{"'tokens': 1066"}},
		{"headers: Authorization: Basic YWRtaW46U2VrcjN0VmFsdWUwMDA0", "YWRtaW46U2VrcjN0", nil},
		{"using key sk-ant-api03-Sekr3tValue0005abcdefghij for the judge", "Sekr3tValue0005", []string{"for the judge"}},
		{"clone https://github.com/x/y with ghp_Sekr3tValue0006abcdefghijklmnopqrstu", "Sekr3tValue0006", []string{"github.com/x/y"}},
		{"aws AKIAIOSFODNN7EXAMPLE configured", "IOSFODNN7EXAMPLE", []string{"configured"}},
		// Quoted values: a shell trace's export, a passphrase with a space, a single-quoted flag value.
		{`+ export WANDB_API_KEY="0123456789abcdefSekr3t"`, "Sekr3t", []string{`export WANDB_API_KEY="[redacted]"`}},
		{`python train.py --password "hunter2 Sekr3t words" --epochs 3`, "Sekr3t", []string{`--password "[redacted]" --epochs 3`}},
		{`run --hf-token='Sekr3tTokValue' --batch 8`, "Sekr3tTokValue", []string{`--hf-token='[redacted]' --batch 8`}},
		// Tokens in URL paths: a Telegram notifier, a Slack webhook the job posts to, a hosted Prometheus key.
		{"notify https://api.telegram.org/bot123456:AAH4xk9Zq0LmNoPqRsTu/sendMessage failed", "AAH4xk9Zq0", []string{"api.telegram.org/[redacted]/sendMessage failed"}},
		{"posting to https://hooks.slack.com/services/T0001/B0001/Sekr3tHookValue ok", "Sekr3tHookValue", []string{"hooks.slack.com/services/T0001/B0001/[redacted] ok"}},
		{"remote_write https://prom.example/api/prom/3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d/push 204", "3f2a9c1b7e6d", []string{"/api/prom/[redacted]/push 204"}},
		// An Authorization header of any scheme, or none (the red team's: only Bearer, Basic, Digest and Token were
		// known, and ApiKey, Key, SSWS, a bare token and AWS's Signature= were shown).
		{"POST /v1/embed Authorization: ApiKey Sekr3tElasticKey0001", "Sekr3t", []string{"Authorization: ApiKey [redacted]"}},
		{`headers={'Authorization': 'Key Sekr3tFalKey0002', 'Accept': 'application/json'}`, "Sekr3t", []string{`'Authorization': 'Key [redacted]', 'Accept': 'application/json'`}},
		{"Authorization: sk_live_Sekr3tRawToken0003 sent", "Sekr3t", []string{"Authorization: [redacted]"}},
		{`{"Proxy-Authorization": "SSWS Sekr3tOktaToken04"}`, "Sekr3t", []string{`"Proxy-Authorization": "SSWS [redacted]"`}},
		{"Authorization: AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=5ekr3tSig0005", "5ekr3tSig", []string{"AWS4-HMAC-SHA256 [redacted]"}},
		// name = value with spaces (TOML, Python), and =>.
		{`wandb_key = "Sekr3tWandb0006"`, "Sekr3t", []string{`wandb_key = "[redacted]"`}},
		{"HUGGING_FACE_HUB_TOKEN = Sekr3tHub0007 (from env)", "Sekr3t", []string{"(from env)"}},
		{"{:password => 'Sekr3tRuby0008'}", "Sekr3t", nil},
		// The red team's smaller misses: a cookie, curl's -u user:password, a Go MySQL DSN, an environment
		// variable's name and its value with only a space between.
		{"> Cookie: session=Sekr3tSession0009; csrftoken=abc", "Sekr3t", []string{"Cookie: [redacted]"}},
		{"Set-Cookie: sid=Sekr3tSid0010; Path=/; HttpOnly", "Sekr3t", []string{"Set-Cookie: [redacted]"}},
		{"+ curl -u admin:Sekr3tCurl0011 http://10.0.0.7:9090/api/v1/query", "Sekr3t", []string{"-u admin:[redacted] http://10.0.0.7:9090"}},
		{"+ curl --user admin:Sekr3tCurl0012 -s", "Sekr3t", []string{"--user admin:[redacted] -s"}},
		{"db: runs:Sekr3tDsn0013@tcp(10.0.0.9:3306)/runs ok", "Sekr3t", []string{"runs:[redacted]@tcp(10.0.0.9:3306)/runs ok"}},
		// A password with @ or : in it was cut at it, the part before it redacted and the rest shown.
		{"db: runs:p@Sekr3tDsn0019@tcp(10.0.0.9:3306)/runs ok", "Sekr3t", []string{"runs:[redacted]@tcp(10.0.0.9:3306)/runs ok"}},
		{"db: runs:p:Sekr3tDsn0020@unix(/run/mysqld.sock)/runs ok", "Sekr3t", []string{"runs:[redacted]@unix(/run/mysqld.sock)/runs ok"}},
		{"WANDB_API_KEY 0123456789abcdefSekr3t0014", "Sekr3t", []string{"WANDB_API_KEY [redacted]"}},
		{"HF_TOKEN not set, using the cache", "", []string{"HF_TOKEN not set, using the cache"}},
		{"curl -u :8000 -s", "", []string{"curl -u :8000 -s"}},
		// Only a user of letters, digits and ._- was known, and only the password up to a / @ or :.
		{"+ curl -u ops@example.com:Sekr3tCurl0015 https://grafana.local/api", "Sekr3t", []string{"-u ops@example.com:[redacted] https://grafana.local/api"}},
		{"+ curl -u admin:pa/ss@Sekr3t0016 -s", "Sekr3t", []string{"-u admin:[redacted] -s"}},
		{"+ curl --user=admin:Sekr3tCurl0017 -s", "Sekr3t", []string{"--user=admin:[redacted] -s"}},
		{"+ curl -uadmin:Sekr3tCurl0018 -s", "Sekr3t", []string{"-uadmin:[redacted] -s"}},
		{`+ curl -u "admin:Sekr3t with spaces" -s`, "Sekr3t", []string{`-u "admin:[redacted]" -s`}},
		{"docker run -u 1000:1000 --gpus all vllm/vllm-openai", "", []string{"-u 1000:1000 --gpus all"}},
		{"python -u gen.py --n 8", "", []string{"python -u gen.py --n 8"}},
		{"curl -u admin https://x/api", "", []string{"curl -u admin https://x/api"}},
		{"max_tokens = 4096, num_tokens: 12", "", []string{"max_tokens = 4096, num_tokens: 12"}},
		{"authorization checks passed", "", []string{"authorization checks passed"}},
		// SGLang's progress lines count tokens as "#token: N": counts, not credentials.
		{"[2025-01-01 10:00:01 TP0] Decode batch. #running-req: 200, #token: 123456, token usage: 0.55, cuda graph: True, gen throughput (token/s): 5678.90, #queue-req: 12", "",
			[]string{"#running-req: 200, #token: 123456, token usage: 0.55, cuda graph: True, gen throughput (token/s): 5678.90, #queue-req: 12"}},
		{"[2025-01-01 10:00:01 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0", "",
			[]string{"#new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00"}},
		{"#token: Sekr3tNotACount0021", "Sekr3t", []string{"#token: [redacted]"}},
		{"#password: 5ekr3t0022", "5ekr3t", []string{"#password: [redacted]"}},
		{"GET http://10.0.0.7:8000/metrics 200", "", []string{"GET http://10.0.0.7:8000/metrics 200"}},
		{"decode: 35 ms per-token 12 ms/step", "", []string{"per-token 12 ms/step"}},
		{"Progress: 300/25000 (0 errors), avg completion: 1066 tokens, max_tokens 4096", "", []string{"Progress: 300/25000 (0 errors), avg completion: 1066 tokens, max_tokens 4096"}},
	}
	for _, tt := range tests {
		got := redactLogLine(tt.line)
		if tt.secret != "" && (strings.Contains(got, tt.secret) || !strings.Contains(got, "[redacted]")) {
			t.Errorf("redactLogLine(%q) = %q; want %q redacted", tt.line, got, tt.secret)
		}
		for _, k := range tt.keep {
			if !strings.Contains(got, k) {
				t.Errorf("redactLogLine(%q) = %q; want %q kept", tt.line, got, k)
			}
		}
	}
}

// "only you see this" is Slack's: its logs answer is ephemeral. The console and `bot ask` print to the one
// person at the terminal, where the phrase was wrong (the new-user pass saw it end the console's answer).
func TestLogsSaysOnlyYouInSlackAlone(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	for _, tt := range []struct {
		source string
		only   bool
	}{{"console", false}, {"cli", false}, {"mention", true}, {"slash", true}, {"dm", true}} {
		rep := e.bot.Ask(context.Background(), Request{Text: "logs", Source: tt.source, User: "UADMIN"})
		text := rep.Message.Text()
		if !strings.Contains(text, "last 2 lines of "+e.Log) || strings.Contains(text, "only you see this") != tt.only {
			t.Errorf("logs from %s = %q; want the lines, and %q only in Slack", tt.source, text, "only you see this")
		}
	}
}

// TestLogsErrorLines: asked for the log's errors ("show me the error log", "/runwatch logs errors"), the
// answer is the recent error lines, redacted, and not the progress lines that count errors; a log without
// any says so and shows its last lines; "logs" alone still shows the last lines.
func TestLogsErrorLines(t *testing.T) {
	e := newBotEnv(t, botOpts{})
	log := "starting\n" +
		"Progress: 100/25000 (0 errors), 0.7 req/s\n" +
		"ERROR 12-06 10:00:01 engine.py:88 request 17 aborted, api_key=Sekr3tValue0001\n" +
		"Progress: 200/25000 (1 error), 0.7 req/s\n" +
		"Traceback (most recent call last):\n" +
		"  File \"gen.py\", line 12, in <module>\n" +
		"RuntimeError: CUDA out of memory\n" +
		"Progress: 300/25000 (2 errors), errors=2, 0.7 req/s\n"
	if err := os.WriteFile(e.Log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErrs := []string{"ERROR 12-06 10:00:01 engine.py:88 request 17 aborted", "Traceback (most recent call last):", "RuntimeError: CUDA out of memory"}
	for _, ask := range []Request{
		{Text: "show me the error log", Source: "console"},
		{Text: "any errors in the log?", Source: "mention", Channel: "C1", ChannelName: "synth", User: "U1"},
		{Text: "logs errors", Source: "console"},
	} {
		rep := e.bot.Ask(context.Background(), ask)
		text := rep.Message.Text()
		if rep.Intent != "logs" || !strings.Contains(text, "recent error lines") {
			t.Errorf("Ask(%q) = intent %q %q; want the logs answer's error lines", ask.Text, rep.Intent, text)
			continue
		}
		for _, w := range wantErrs {
			if !strings.Contains(text, w) {
				t.Errorf("Ask(%q) = %q; want the error line %q", ask.Text, text, w)
			}
		}
		for _, no := range []string{"Progress:", "gen.py", "starting", "Sekr3tValue0001"} {
			if strings.Contains(text, no) {
				t.Errorf("Ask(%q) = %q; want no %q", ask.Text, text, no)
			}
		}
		if !strings.Contains(text, "last 3 lines of the error lines among the last 8 lines of") {
			t.Errorf("Ask(%q) = %q; want it to say how many lines it searched", ask.Text, text)
		}
	}
	if text := e.bot.Ask(context.Background(), Request{Text: "logs", Source: "console"}).Message.Text(); !strings.Contains(text, "last 8 lines of") || !strings.Contains(text, "starting") {
		t.Errorf("logs = %q; want the last lines", text)
	}

	e.WriteLog(t, 300, 25000)
	rep := e.bot.Ask(context.Background(), Request{Text: "show me the error log", Source: "console"})
	if text := rep.Message.Text(); !strings.Contains(text, "No error lines among the last 2 lines of") || !strings.Contains(text, "Progress: 300/25000") {
		t.Errorf("show me the error log (none in it) = %q; want it to say none, then the last lines", text)
	}
}

func TestIsErrorLine(t *testing.T) {
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"ERROR 12-06 10:00:01 engine.py:88 aborted", true},
		{"[error] upstream closed", true},
		{"RuntimeError: CUDA out of memory", true},
		{"Traceback (most recent call last):", true},
		{"torch.cuda.OutOfMemoryError: CUDA out of memory", true},
		{"asyncio.exceptions.CancelledError", true},
		{"FATAL: cannot open shared object", true},
		{"panic: runtime error: index out of range", true},
		{"INFO 12-06 10:00:01 Avg prompt throughput: 50 tokens/s", false},
		{"Progress: 300/25000 (0 errors), 0.7 req/s", false},
		{"Progress: 300/25000 (1 error), 0.7 req/s", false},
		{"done=300 total=25000 errors=3", false},
		{"max_tokens=4096 errors: 0", false},
	} {
		if got := isErrorLine(tt.line); got != tt.want {
			t.Errorf("isErrorLine(%q) = %v; want %v", tt.line, got, tt.want)
		}
	}
}

// TestLogLinesRedactedBeforeTheyAreCut is the red team's: a line is cut to logLineBytes, and it was cut
// before it was redacted, so a credential the cut went through lost what its redaction knows it by and the
// part before the cut was shown: "postgres://admin:Sekr3tPa" (no "@" left, so not a URL with a password),
// "sk-proj-Sekr3tVa" (short of a key's 20 characters), "Bearer Sekr3t" (short of 8). Each secret is put
// so that the cut falls at every byte of it in turn: no part of it is ever shown, in the text or the data.
func TestLogLinesRedactedBeforeTheyAreCut(t *testing.T) {
	t.Parallel()
	e := newBotEnv(t, botOpts{NoLogFile: true})
	for _, secret := range []string{
		"postgres://admin:Sekr3tPassw0rd@db.internal:5432/runs",
		"OPENAI_KEY sk-proj-Sekr3tValue0123456789abcdef",
		"headers {'Authorization': 'Bearer Sekr3tBearer0123456789'}",
		"ghp_Sekr3tGitHub0123456789abcdefghijkl",
	} {
		at := strings.Index(secret, "Sekr3t")
		for cut := at; cut <= len(secret); cut++ {
			line := strings.Repeat("x", logLineBytes-cut-1) + " " + secret
			if err := os.WriteFile(e.Log, []byte("starting\n"+line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rep := e.bot.Ask(context.Background(), Request{Text: "logs", Source: "console"})
			data, _ := json.Marshal(rep.Data)
			for where, s := range map[string]string{"text": rep.Message.Text(), "data": string(data)} {
				if strings.Contains(s, "Sekr3") || !strings.Contains(s, "starting") {
					t.Errorf("logs %s, %q cut after %d bytes = %s; want the line without any of its secret", where, secret, cut, s)
				}
			}
		}
	}
}

// TestSecurityLogLinesCarryNoCredentials writes a job log whose lines print a Slack token, a URL
// with a password and an api_key, a presigned S3 URL, a Hugging Face token, an environment dump and a
// bearer header: the last log lines answer (its text,
// its blocks and the JSON data behind it) shows the lines with none of them.
func TestSecurityLogLinesCarryNoCredentials(t *testing.T) {
	e := newBotEnv(t, botOpts{NoLogFile: true, Run: func(r *config.Run) { r.Total = 25000 }})
	const (
		token = "xoxb-1234-5678-TokenLeak"
		pass  = "Pa55wordLeak"
		key   = "ApiKeyLeak"
		sig   = "AmzSigLeak"
		hf    = "hf_HuggingFaceTokenLeak0123456789"
		wandb = "0123456789abcdefWandbKeyLeak"
		oauth = "BearerTokenLeak.abc"
	)
	log := "starting\n" +
		"SLACK_BOT_TOKEN=" + token + "\n" +
		"env: HF_TOKEN=" + hf + " WANDB_API_KEY=" + wandb + " max_tokens=4096\n" +
		"login with " + hf + "; headers {'Authorization': 'Bearer " + oauth + "'}\n" +
		"GET http://10.0.0.1:8000/v1?token=" + key + " ok\n" +
		"connect http://wandb:" + pass + "@wandb.local/api?api_key=" + key + " ok\n" +
		"GET https://bucket.s3.amazonaws.com/x?X-Amz-Signature=" + sig + "&X-Amz-Expires=60\n" +
		"Progress: 300/25000 (0 errors), 0.7 req/s, avg completion: 1066 tokens, elapsed: 408s\n"
	if err := os.WriteFile(e.Log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := e.bot.Ask(context.Background(), Request{Text: "/runwatch logs", Source: "console"})
	data, _ := json.Marshal(rep.Data)
	blocks, _ := json.Marshal(rep.Message.Blocks())
	places := map[string]string{"text": rep.Message.Text(), "blocks": string(blocks), "data": string(data)}
	for where, s := range places {
		if !strings.Contains(s, "wandb.local/api?api_key=[redacted]") || !strings.Contains(s, "Progress: 300/25000") {
			t.Errorf("logs %s = %s; want the lines, their URLs redacted", where, s)
		}
		if !strings.Contains(s, "max_tokens=4096") || !strings.Contains(s, "v1?token=[redacted] ok") {
			t.Errorf("logs %s = %s; want max_tokens=4096 left as it is, and a URL's query redacted once", where, s)
		}
		for _, leak := range []string{"TokenLeak", pass, key, sig, hf, "HuggingFace", wandb, oauth} {
			if strings.Contains(s, leak) {
				t.Errorf("logs %s holds %q:\n%s", where, leak, s)
			}
		}
	}
}
