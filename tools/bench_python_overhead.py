#!/usr/bin/env python3
"""Python overhead vs the CLI for one line (issue 22), measured side by side in one run.

    build/venv-py/bin/python tools/bench_python_overhead.py build/release/quill [--runs 7] [--threads 2]

Each round, alternating, on the shipped model with its default sampler:
  cli_process   `quill line --text T -o x.png` as a fresh process, wall time
  py_process    `python -c "import quill; ...generate(T)...; write PNG"` as a fresh process, wall time
  cli_engine    the CLI's own timing line: style + render + sample (a fresh engine: the plan is built)
  py_call       in this process, a fresh quill.LineStudio, wall time of .generate(T) (plan built too)
  py_engine     that call's engine time (LineStudio.last_timing: style + render + sample)
Prints medians and the ratios py_call / cli_engine (the library's per-line overhead), py_call /
py_engine (the binding's own cost) and py_process / cli_process (interpreter + numpy import
included)."""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import quill

TEXT = "Kongl. Maj:ts nådiga förordning"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli", help="the quill CLI")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    env = {**os.environ, "QUILL_THREADS": str(args.threads)}
    tmp = tempfile.mkdtemp(prefix="quill-bench-py-")
    png_cli, png_py = os.path.join(tmp, "cli.png"), os.path.join(tmp, "py.png")
    py_script = (f"import quill; s = quill.LineStudio(threads={args.threads}); "
                 f"open({png_py!r}, 'wb').write(quill.encode_png(s.generate({TEXT!r})))")
    rows: dict[str, list[float]] = {k: [] for k in ("cli_process", "py_process", "cli_engine", "py_call", "py_engine")}
    for i in range(args.runs + 1):  # round 0 warms the page cache and is dropped
        t0 = time.perf_counter()
        r = subprocess.run([args.cli, "line", "--text", TEXT, "--threads", str(args.threads), "-o", png_cli],
                           capture_output=True, text=True, env=env, check=True)
        cli_process = time.perf_counter() - t0
        m = re.search(r"style (\d+) ms, render (\d+) ms, sample (\d+) ms", r.stdout + r.stderr)
        if not m:
            sys.exit(f"no timing line in the CLI's output:\n{r.stdout}{r.stderr}")
        cli_engine = sum(int(g) for g in m.groups()) / 1000
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", py_script], env=env, check=True)
        py_process = time.perf_counter() - t0
        studio = quill.LineStudio(threads=args.threads)
        t0 = time.perf_counter()
        gray = studio.generate(TEXT)
        py_call = time.perf_counter() - t0
        t = studio.last_timing
        py_engine = (t["style_ms"] + t["render_ms"] + t["sample_ms"]) / 1000
        if i == 0:
            continue
        for k, v in (("cli_process", cli_process), ("py_process", py_process), ("cli_engine", cli_engine),
                     ("py_call", py_call), ("py_engine", py_engine)):
            rows[k].append(v)
    with open(png_cli, "rb") as a, open(png_py, "rb") as b:
        same = a.read() == b.read()
    med = {k: statistics.median(v) * 1000 for k, v in rows.items()}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# {cpu}, threads {args.threads}, {args.runs} rounds, medians in ms; text {TEXT!r}; "
          f"gray {gray.shape}; CLI and Python PNGs identical: {same}")
    for k, v in med.items():
        print(f"{k:12s} {v:8.1f}")
    print(f"per-line call, Python vs CLI engine (py_call / cli_engine): {med['py_call'] / med['cli_engine']:.3f}")
    print(f"binding cost (py_call / py_engine):                         {med['py_call'] / med['py_engine']:.3f}")
    print(f"whole process (py_process / cli_process):                   {med['py_process'] / med['cli_process']:.3f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
