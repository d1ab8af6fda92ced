#!/usr/bin/env python3
"""The line studio's single-machine figures for docs/SCALING.md, in one run on one machine: the
same closed-loop load (tools/bench_serve_load.py: C clients, texts of 1-6 Swedish words, the
model's default sampler) against

  serve        `quill serve` (one process, micro-batching on: its defaults)
  python       quill.LineStudio.generate_many in this process, C lines per call (C clients' worth
               arriving at once), max_batch 8
  ray-1x2      the Ray Serve app (deploy/ray), 1 worker replica with 2 CPUs / 2 threads
  ray-2x1      the Ray Serve app, 2 worker replicas with 1 CPU / 1 thread each

    build/venv-py/bin/python tools/bench_scaling.py build/release/quill [--clients 16] [--seconds 20]

Prints a Markdown table (lines/s, p50 / p95 latency, RSS of the serving processes) and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOAD = ROOT / "tools" / "bench_serve_load.py"
sys.path.insert(0, str(LOAD.parent))
from bench_serve_load import load_words  # noqa: E402


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            total += int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))
        except (OSError, AttributeError):
            pass
    return total / 1024


def wait_ready(url: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    sys.exit(f"{url} was not ready within {timeout_s:.0f} s")


def load(url: str, clients: int, seconds: float) -> dict:
    subprocess.run([sys.executable, str(LOAD), url, "--clients", "4", "--seconds", "3"], check=True,
                   capture_output=True)  # warm the plans of common widths
    r = subprocess.run([sys.executable, str(LOAD), url, "--clients", str(clients), "--seconds", str(seconds)],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def bench_serve(cli: str, clients: int, seconds: float) -> dict:
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    proc = subprocess.Popen([cli, "serve", "--port", "0", "--threads", "2"], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = None
        for _ in range(300):
            m = re.search(r"http://[^/\s]+", Path(log.name).read_text())
            if m:
                url = m.group(0)
                break
            time.sleep(0.1)
        if not url:
            sys.exit(f"quill serve did not start: {Path(log.name).read_text()}")
        wait_ready(url)
        r = load(url, clients, seconds)
        r["rss_mib"] = rss_mib([proc.pid])
        return r
    finally:
        proc.terminate()
        proc.wait(60)


def bench_python(clients: int, seconds: float) -> dict:
    import quill

    words = load_words("/usr/share/dict/swedish")  # the servers' load draws from the same list
    rng = random.Random(1)
    studio = quill.LineStudio(threads=2)
    before = rss_mib([os.getpid()])
    lat, lines = [], 0
    texts = lambda: [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(clients)]
    studio.generate_many(texts()[:4], clamp_overflow=True)  # warm, as the servers are
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        t = time.monotonic()
        studio.generate_many(texts(), seed=rng.randrange(1 << 31), clamp_overflow=True, max_batch=8)
        lat += [time.monotonic() - t] * clients  # every line of the call waits for the whole call
        lines += clients
    wall = time.monotonic() - t0
    lat.sort()
    return {"lines_per_s": lines / wall, "p50_s": lat[len(lat) // 2], "p95_s": lat[int(0.95 * (len(lat) - 1))],
            "rss_mib": rss_mib([os.getpid()]), "rss_before_model_mib": before}


def bench_ray(replicas: int, cpus: float, clients: int, seconds: float) -> dict:
    import ray
    from ray import serve

    sys.path.insert(0, str(ROOT / "deploy" / "ray"))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "deploy" / "ray"), os.environ.get("PYTHONPATH")]))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from quill_serve_app import app_builder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(app_builder({"worker_replicas": replicas, "worker_num_cpus": cpus, "threads": int(cpus),
                               "max_batch": 8, "max_queued_requests": 256}), name="quill", route_prefix="/",
                  blocking=False)
        url = f"http://127.0.0.1:{port}"
        wait_ready(url)
        r = load(url, clients, seconds)
        pids = [int(p) for p in subprocess.run(["pgrep", "-f", "LineStudioWorker"], capture_output=True,
                                               text=True).stdout.split()]
        r["rss_mib"] = rss_mib(pids)
        return r
    finally:
        serve.shutdown()
        ray.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--only", nargs="*", default=["serve", "python", "ray-1x2", "ray-2x1"])
    a = ap.parse_args()
    rows = {}
    for name in a.only:
        print(f"# {name} ...", file=sys.stderr, flush=True)
        if name == "serve":
            rows[name] = bench_serve(a.cli, a.clients, a.seconds)
        elif name == "python":
            rows[name] = bench_python(a.clients, a.seconds)
        elif name == "ray-1x2":
            rows[name] = bench_ray(1, 2, a.clients, a.seconds)
        elif name == "ray-2x1":
            rows[name] = bench_ray(2, 1, a.clients, a.seconds)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# {cpu}, {os.cpu_count()} CPUs, {a.clients} clients, {a.seconds:.0f} s per setup, "
          f"{time.strftime('%Y-%m-%d')}")
    print("| setup | lines/s | p50 / p95 latency s | RSS MiB (serving processes) |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['lines_per_s']:.2f} | {r['p50_s']:.2f} / {r['p95_s']:.2f} | {r['rss_mib']:.0f} |")
    print(json.dumps(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
