#!/usr/bin/env python3
"""Closed-loop load on a running `quill serve`: C clients, each posting /v1/lines one after the
other for D seconds (texts of 1-6 words from Debian's Swedish word list, so widths and buckets
vary as they would), then lines/s, latency percentiles and the batch sizes the server ran (from
/metrics, before/after). Standard library only.

  tools/bench_serve_load.py URL --clients 16 --seconds 20 [--words /usr/share/dict/swedish]
  tools/bench_serve_load.py URL --open-rate 40 --seconds 60   (open loop: arrivals at 40/s
      whatever the answers, each request on its own connection; at most 2048 in flight)
Prints one JSON object.
"""
import argparse
import http.client
import json
import random
import re
import threading
import time
import urllib.parse


def load_words(path):
    try:
        with open(path, encoding="latin-1") as f:  # Debian's wswedish is ISO-8859-1
            words = [w.strip() for w in f if w.strip() and "'" not in w and len(w.strip()) <= 14]
        return words or ["hej", "och", "förordning"]
    except OSError:
        return ["Kongl.", "Maj:ts", "nådiga", "förordning", "om", "hej", "och", "skogen", "år", "1766"]


def batch_counts(host, port):
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(r'quill_batches_total\{rows="(\d+)"\} (\d+)', body)}


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--words", default="/usr/share/dict/swedish")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="steps per line (0: the model's default)")
    ap.add_argument("--open-rate", type=float, default=0, help="open-loop arrivals per second (0: closed loop)")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    words = load_words(a.words)
    before = batch_counts(u.hostname, u.port)
    lat, codes, lock = [], {}, threading.Lock()
    stop_at = time.time() + a.seconds

    def client(k):
        rng = random.Random(a.seed * 1000 + k)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        while time.time() < stop_at:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
            body = {"text": text, "seed": rng.randrange(1 << 31), "clamp_overflow": True}
            if a.steps:
                body["steps"] = a.steps
            t0 = time.time()
            try:
                conn.request("POST", "/v1/lines", json.dumps(body), {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                status = r.status
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
            except (OSError, http.client.HTTPException):
                status = "conn_error"
                conn.close()
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
            dt = time.time() - t0
            with lock:
                codes[status] = codes.get(status, 0) + 1
                if status == 200:
                    lat.append(dt)

    def one(k):
        rng = random.Random(a.seed * 7919 + k)
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        body = {"text": text, "seed": rng.randrange(1 << 31), "clamp_overflow": True}
        t0 = time.time()
        try:
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
            conn.request("POST", "/v1/lines", json.dumps(body), {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            status = r.status
            conn.close()
        except (OSError, http.client.HTTPException):
            status = "conn_error"
        with lock:
            codes[status] = codes.get(status, 0) + 1
            if status == 200:
                lat.append(time.time() - t0)

    t_start = time.time()
    if a.open_rate > 0:
        inflight = threading.BoundedSemaphore(2048)
        threads, k = [], 0
        while time.time() < stop_at:
            target = t_start + k / a.open_rate
            time.sleep(max(0.0, target - time.time()))
            if not inflight.acquire(timeout=1):
                with lock:
                    codes["client_backlog"] = codes.get("client_backlog", 0) + 1
                continue
            t = threading.Thread(target=lambda k=k: (one(k), inflight.release()))
            t.start()
            threads.append(t)
            k += 1
        for t in threads:
            t.join()
        wall = time.time() - t_start
        after = batch_counts(u.hostname, u.port)
        hist = {r: after.get(r, 0) - before.get(r, 0) for r in sorted(set(after) | set(before))}
        print(json.dumps({"open_rate": a.open_rate, "seconds": round(wall, 2), "sent": k,
                          "lines_per_s": round(len(lat) / wall, 3), "p50_s": percentile(lat, 50),
                          "p99_s": percentile(lat, 99), "status": {str(s): n for s, n in codes.items()},
                          "batch_sizes": {r: n for r, n in hist.items() if n}}))
        return
    threads = [threading.Thread(target=client, args=(k,)) for k in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t_start
    after = batch_counts(u.hostname, u.port)
    hist = {r: after.get(r, 0) - before.get(r, 0) for r in sorted(set(after) | set(before))}
    hist = {r: n for r, n in hist.items() if n}
    print(json.dumps({
        "clients": a.clients, "seconds": round(wall, 2), "lines": len(lat),
        "lines_per_s": round(len(lat) / wall, 3),
        "p50_s": percentile(lat, 50), "p95_s": percentile(lat, 95), "p99_s": percentile(lat, 99),
        "status": {str(k): v for k, v in codes.items()}, "batch_sizes": hist,
    }))


if __name__ == "__main__":
    main()
