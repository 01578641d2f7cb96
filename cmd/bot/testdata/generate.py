"""A small synthetic-data job, as people run them against a vLLM server: it sends completions with a few
threads, appends one JSON line per answer to --out, and prints the seed's progress line every few items,
to stdout (redirected to a file by whoever started it) or, with --log, to a file it opens itself.
Each thread keeps its connection to the server open between requests, as the HTTP clients such jobs use
do (the openai client's connection pool, aiohttp, requests.Session). Standard library only."""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True, help="the server's base URL, http://127.0.0.1:PORT")
ap.add_argument("--total", type=int, default=100000)
ap.add_argument("--concurrency", type=int, default=4)
ap.add_argument("--max-tokens", type=int, default=32)
ap.add_argument("--out", required=True, help="the JSONL file answers are appended to")
ap.add_argument("--log", help="print progress to this file instead of stdout")
ap.add_argument("--every", type=int, default=5, help="print progress every this many items")
a = ap.parse_args()

log = open(a.log, "a", buffering=1) if a.log else sys.stdout
out = open(a.out, "a", buffering=1)
lock = threading.Lock()
done = errors = tokens = 0
start = time.time()
url = urllib.parse.urlsplit(a.url)
conns = threading.local()


def post(path, body):
    """POSTs body on this thread's connection, opening it (again, once, if the server closed it)."""
    for attempt in range(2):
        if getattr(conns, "c", None) is None:
            conns.c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        try:
            conns.c.request("POST", url.path.rstrip("/") + path, body, {"Content-Type": "application/json"})
            r = conns.c.getresponse()
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"HTTP {r.status}")
            return json.loads(data)
        except (http.client.HTTPException, OSError):
            conns.c.close()
            conns.c = None
            if attempt:
                raise


def one(i):
    global done, errors, tokens
    body = json.dumps({"model": "fake-model", "prompt": f"Write sample {i}.", "max_tokens": a.max_tokens}).encode()
    try:
        resp = post("/v1/completions", body)
        n = resp.get("usage", {}).get("completion_tokens", 0)
        with lock:
            out.write(json.dumps({"id": i, "text": resp["choices"][0]["text"][:80]}) + "\n")
            done += 1
            tokens += n
    except Exception:
        with lock:
            errors += 1
    with lock:
        if (done + errors) % a.every == 0:
            el = time.time() - start
            print(f"Progress: {done}/{a.total} ({errors} errors), {done / el:.1f} req/s, "
                  f"avg completion: {tokens / max(done, 1):.0f} tokens, elapsed: {el:.0f}s", file=log, flush=True)


with ThreadPoolExecutor(a.concurrency) as ex:
    list(ex.map(one, range(a.total)))
