#!/usr/bin/env python3
"""The Ray Serve deployment (deploy/ray/) under a replica failure (issue 22).

A local Ray cluster on this machine (a head with 0 CPUs: control plane only, plus 2 worker nodes
of 1 CPU each), the quill_serve_app with 2 LineStudioWorker replicas (1 thread each), a bounded
load of lines and jobs over HTTP, one worker replica's process SIGKILLed mid-load. Passes when
every request ended with a valid PNG of the model's line height or a clear JSON error (most must
be PNGs), every job reached a final state, and Serve brought the deployment back to 2 RUNNING
replicas within the time limit.

    build/venv-py/bin/python tests/ray/test_ray_serve.py      # exit 0 pass, 77 skip, else fail
    build/venv-py/bin/python -m pytest tests/ray               # the same, as a pytest test

Knobs (environment): QUILL_RAY_TEST_LINES (40), QUILL_RAY_TEST_STEPS (20), QUILL_RAY_TEST_CLIENTS (8),
QUILL_RAY_TEST_TIMEOUT_S (300: the whole run, cleanup included), QUILL_RAY_TEST_MODEL (the packaged
model), QUILL_RAY_TEST_KEEP=1 (keep the Ray logs; on failure the Serve tracebacks are printed).
"""

from __future__ import annotations

import base64
import concurrent.futures as cf
import faulthandler
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

SKIP = 77
REPO = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO / "deploy" / "ray"
APP = "quill"
WORKER = "LineStudioWorker"
N_LINES = int(os.environ.get("QUILL_RAY_TEST_LINES", "40"))
N_JOBS = 4
CLIENTS = int(os.environ.get("QUILL_RAY_TEST_CLIENTS", "8"))
STEPS = int(os.environ.get("QUILL_RAY_TEST_STEPS", "20"))
TOTAL_TIMEOUT_S = float(os.environ.get("QUILL_RAY_TEST_TIMEOUT_S", "300"))
REQUEST_TIMEOUT_S = 120      # client side; the server's own deadline (timeout_s) is 90 s
RECOVERY_TIMEOUT_S = 120
OBJECT_STORE_BYTES = 100 << 20
# The errors a replica failure may cause; any other error fails the test.
EXPECTED_ERRORS = {"503:replica_failed", "504:deadline_exceeded", "429:queue_full"}
TEXTS = ["Kongl. Maj:ts nådiga förordning", "Stockholm", "den 1 januari 1800", "Hej"]
BOUNDARY = "quill-test-b0undary"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: dict | None = None, timeout: float = REQUEST_TIMEOUT_S,
         form: list | None = None):
    """-> (status, headers, bytes); HTTP errors are answers too, only transport failures raise.
    form: multipart/form-data parts (name, bytes) and file parts (name, bytes, filename) instead."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data else {}
    if form is not None:
        data = b"".join(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{p[0]}"'.encode()
                        + (f'; filename="{p[2]}"'.encode() if len(p) > 2 else b"") + b"\r\n\r\n" + p[1] + b"\r\n"
                        for p in form) + f"--{BOUNDARY}--\r\n".encode()
        headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def error_code(status: int, data: bytes) -> str | None:
    """The code of a well-formed API error body, else None (a malformed error is a failure)."""
    try:
        err = json.loads(data)["error"]
        if isinstance(err["code"], str) and isinstance(err["message"], str) and "field" in err:
            return f"{status}:{err['code']}"
    except (ValueError, KeyError, TypeError):
        pass
    return None


class Outcome:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.retried = 0
        self.errors: Counter[str] = Counter()
        self.failures: list[str] = []  # requests that ended neither with a result nor a clear error
        self.replicas: Counter[str] = Counter()
        self.batch_sizes: Counter[str] = Counter()
        self.lines: dict[int, bytes] = {}  # request index -> PNG

    def record_line(self, i: int, status: int, headers: dict, data: bytes, line_height: int) -> None:
        with self.lock:
            if status == 200:
                size = png_size(data)
                if size is None or size[1] != line_height:
                    self.failures.append(f"line {i}: 200 but not a PNG of height {line_height} ({size})")
                    return
                self.ok += 1
                self.lines[i] = data
                self.replicas[headers.get("x-quill-replica", "?")] += 1
                self.batch_sizes[headers.get("x-quill-batch-size", "?")] += 1
                self.retried += headers.get("x-quill-attempts") == "2"
                return
            code = error_code(status, data)
            if code is None:
                self.failures.append(f"line {i}: HTTP {status} without a JSON error: {data[:200]!r}")
            else:
                self.errors[code] += 1


def line_request(i: int) -> dict:
    return {"text": TEXTS[i % len(TEXTS)], "seed": i, "steps": STEPS, "timeout_s": 90}


def compare_with_library(quill, model_dir: str, lines: dict[int, bytes]) -> list[str]:
    """Each served line against the same line written here by the library: equal up to the float
    rounding a shared batch may bring (at most 2 of 255 gray levels, as quill serve promises)."""
    import numpy as np
    from PIL import Image
    import io

    studio = quill.LineStudio(model_dir, threads=1)
    bad = []
    for i, data in sorted(lines.items()):
        r = line_request(i)
        ref = studio.generate(r["text"], seed=r["seed"], steps=r["steps"])
        got = np.asarray(Image.open(io.BytesIO(data)))
        diff = int(np.abs(got.astype(int) - ref).max()) if got.shape == ref.shape else None
        if diff is None or diff > 2:
            bad.append(f"line {i}: differs from the library's ({got.shape} vs {ref.shape}, max diff {diff})")
    return bad


def worker_replica_actors(ray) -> dict[str, str]:
    """{replica unique id: actor name} of the live LineStudioWorker replicas."""
    out = {}
    for a in ray.util.list_named_actors(all_namespaces=True):
        name = a["name"] if isinstance(a, dict) else a
        if f"#{WORKER}#" in name:
            out[name.rsplit("#", 1)[1]] = name
    return out


def kill_replica(ray, name: str) -> str:
    """SIGKILLs the replica's process (a crash, not a shutdown); ray.kill when its pid is unknown."""
    actor = ray.get_actor(name, namespace="serve")
    try:
        table = ray._private.state.actors()  # GCS actor table (no dashboard needed)
        pids = [a.get("Pid") for a in table.values() if a.get("Name") == name and a.get("State") == "ALIVE"]
        if pids and pids[0]:
            os.kill(int(pids[0]), signal.SIGKILL)
            return f"SIGKILL pid {pids[0]}"
    except Exception as e:  # noqa: BLE001 - private API; fall back to ray.kill
        log(f"actor table unavailable ({e}); using ray.kill")
    ray.kill(actor, no_restart=True)
    return "ray.kill"


def running_workers(serve) -> int:
    try:
        dep = serve.status().applications[APP].deployments[WORKER]
    except (KeyError, AttributeError):
        return 0
    states = {str(getattr(k, "value", k)): v for k, v in dep.replica_states.items()}
    return states.get("RUNNING", 0) if sum(states.values()) == states.get("RUNNING", 0) else -1


def run_job(base: str, i: int, line_height: int) -> str:
    """Submits one job and follows it to its end -> an outcome key (or raises AssertionError)."""
    status, _, data = http("POST", f"{base}/v1/jobs", {"text": TEXTS[i % len(TEXTS)], "seed": 1000 + i, "steps": STEPS,
                                                       "timeout_s": 90})
    if status != 202:
        code = error_code(status, data)
        assert code is not None, f"job {i}: submit HTTP {status} without a JSON error: {data[:200]!r}"
        return f"submit {code}"
    job = json.loads(data)
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    while time.monotonic() < deadline:
        status, _, data = http("GET", f"{base}{job['status_url']}")
        assert status == 200, f"job {i}: GET status {status}: {data[:200]!r}"
        view = json.loads(data)
        if view["state"] in ("done", "failed", "cancelled"):
            status, _, data = http("GET", f"{base}{job['result_url']}")
            if view["state"] == "done":
                size = png_size(data)
                assert status == 200 and size and size[1] == line_height, f"job {i}: bad result {status} {size}"
                return "done"
            assert view["error"] and error_code(status, data), f"job {i}: {view['state']} without a clear error"
            return f"{view['state']} {error_code(status, data)}"
        time.sleep(0.3)
    raise AssertionError(f"job {i} did not end within {REQUEST_TIMEOUT_S} s")


def check_api(base: str, ready: dict) -> None:
    """Before the load: refusals answer as quill serve does (status, code, field), and the other
    routes (JSON response with an inline style, job cancel, events) work."""
    line_height = int(ready["line_height"])
    cases = [("POST", "/v1/lines", {"text": "x", "stepz": 3}, 422, "unknown_field", "stepz"),
             ("POST", "/v1/lines", {"text": "x", "steps": 0}, 422, "out_of_range", "steps"),
             ("POST", "/v1/lines", {"text": "x", "seed": "7"}, 422, "invalid_type", "seed"),
             ("POST", "/v1/lines", {"text": "x", "style_id": "nope"}, 404, "unknown_style", "style_id"),
             ("POST", "/v1/lines", {"text": "x", "style": "%%%"}, 422, "invalid_base64", "style"),
             ("POST", "/v1/lines", {"text": "x", "style": "aGVsbG8="}, 422, "invalid_image", "style"),
             ("POST", "/v1/lines", {"text": "x" * 301}, 422, "text_too_long", "text"),
             ("POST", "/v1/lines", {"text": "m" * 300}, 422, "invalid_text", "text"),  # wider than the model
             ("POST", "/v1/jobs", {"text": "m" * 300}, 422, "invalid_text", "text"),
             ("GET", "/v1/jobs/0123abc", None, 404, "unknown_job", "id"),
             ("GET", "/nowhere", None, 404, "not_found", None)]
    for method, path, body, want_status, want_code, want_field in cases:
        status, _, data = http(method, base + path, body, timeout=30)
        err = json.loads(data).get("error", {}) if data.startswith(b"{") else {}
        assert (status, err.get("code"), err.get("field")) == (want_status, want_code, want_field), \
            f"{method} {path} {str(body)[:60]}: got {status} {data[:300]!r}"

    style = Path(ready["model"]) / "style_reference.png"
    if style.is_file():
        status, headers, data = http("POST", f"{base}/v1/lines", {
            "text": "Hej", "seed": 3, "steps": STEPS, "response_format": "json",
            "style": base64.b64encode(style.read_bytes()).decode()}, timeout=60)
        assert status == 200, f"inline style: {status} {data[:300]!r}"
        line = json.loads(data)
        assert line["height"] == line_height and line["style_id"] == "inline" and line["seed"] == 3, line
        assert png_size(base64.b64decode(line["png_base64"])) == (line["width"], line_height)

    status, _, data = http("POST", f"{base}/v1/jobs", {"text": "Stockholm", "seed": 9, "steps": STEPS}, timeout=60)
    assert status == 202, f"job: {status} {data[:300]!r}"
    job = json.loads(data)
    assert job["status_url"] == f"/v1/jobs/{job['id']}" and job["bucket_width"] > 0, job
    status, _, data = http("DELETE", f"{base}{job['status_url']}", timeout=30)
    err = json.loads(data).get("error") or {}
    assert (status == 200 and json.loads(data)["state"] == "cancelled") or \
        (status == 409 and err.get("code") == "already_ended"), f"cancel: {status} {data[:300]!r}"
    status, _, data = http("POST", f"{base}/v1/jobs", {"text": "Stockholm", "seed": 9, "steps": STEPS}, timeout=60)
    job = json.loads(data)
    with urllib.request.urlopen(f"{base}{job['events_url']}", timeout=60) as r:
        events = r.read().decode()  # the stream ends after the job's last event
    assert "event: done" in events, f"events: {events[:500]!r}"


def follow_events(url: str, on_event=None) -> list[tuple[str, dict]]:
    """A job's SSE stream -> [(event, data)] until it ends; on_event(event, data) sees each as it comes."""
    events, kind = [], None
    with urllib.request.urlopen(url, timeout=60) as r:
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                events.append((kind, json.loads(line[6:])))
                if on_event:
                    on_event(kind, events[-1][1])
    return events


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims that size but has no pixels: the pixel-count check reads its header only."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + header + chunk(b"IEND", b"")


def check_forms_steps_glyphs(base: str, ready: dict) -> None:
    """multipart/form-data bodies (the same line as JSON; quill serve's refusals), a job's SSE
    steps 0..N then done, DELETE of a running job, and missing_glyphs."""
    line_height = int(ready["line_height"])
    style_path = Path(ready["model"]) / "style_reference.png"
    style = style_path.read_bytes() if style_path.is_file() else None
    fields = [("text", b"Stockholm"), ("seed", b"11"), ("steps", str(STEPS).encode())]
    as_json = {"text": "Stockholm", "seed": 11, "steps": STEPS}
    if style:
        fields.append(("style", style, "style.png"))
        as_json["style"] = base64.b64encode(style).decode()
    status, _, from_form = http("POST", f"{base}/v1/lines", form=fields, timeout=60)
    _, _, from_json = http("POST", f"{base}/v1/lines", as_json, timeout=60)
    assert status == 200 and from_form == from_json, f"multipart line: {status} {from_form[:200]!r}"
    for parts, want in [([("text", b"x", "text.txt")], (422, "unknown_field", "text")),
                        ([("text", b"x"), ("clamp_overflow", b"yes")], (422, "invalid_type", "clamp_overflow")),
                        ([("text", b"x"), ("style", png_header(5000, 4000), "big.png")],
                         (413, "image_too_large", "style"))]:
        status, _, data = http("POST", f"{base}/v1/lines", form=parts, timeout=30)
        err = json.loads(data).get("error", {})
        assert (status, err.get("code"), err.get("field")) == want, f"multipart {parts[-1][0]}: {status} {data[:300]!r}"

    status, _, data = http("POST", f"{base}/v1/jobs", form=fields, timeout=60)
    assert status == 202, f"multipart job: {status} {data[:300]!r}"
    job = json.loads(data)
    events = follow_events(base + job["events_url"])
    steps = [d["step"] for kind, d in events if kind == "step"]
    assert [kind for kind, _ in events if kind != "step"] in (["queued", "done"], ["done"]), events
    assert steps == list(range(steps[0], STEPS + 1)) and steps[0] <= 1 and events[-1][0] == "done", \
        f"steps {steps}, events {[k for k, _ in events]}"
    assert events[-1][1]["result_url"] == job["result_url"]
    assert all(d["steps"] == STEPS for kind, d in events if kind == "step")
    view = json.loads(http("GET", base + job["status_url"])[2])
    assert (view["state"], view["step"], view["steps"], view["style_id"]) == \
        ("done", STEPS, STEPS, "inline" if style else "default"), view
    assert http("GET", base + job["result_url"])[2] == from_form  # same line, seed and style

    status, _, data = http("POST", f"{base}/v1/jobs", {"text": TEXTS[0] * 2, "seed": 1, "steps": 100}, timeout=60)
    job = json.loads(data)
    cancelled = []

    def cancel_once_running(kind: str, data: dict) -> None:
        if kind == "step" and data["step"] >= 1 and not cancelled:
            cancelled.append(http("DELETE", base + job["status_url"], timeout=30))
    events = follow_events(base + job["events_url"], cancel_once_running)
    assert cancelled and cancelled[0][0] == 200 and json.loads(cancelled[0][2])["state"] == "cancelled", cancelled
    assert events[-1][0] == "cancelled" and events[-1][1]["error"]["code"] == "cancelled", events[-3:]

    status, headers, data = http("POST", f"{base}/v1/lines", {"text": "Hej \u4e2d \U0001F600", "seed": 1, "steps": 2,
                                                              "response_format": "json"}, timeout=60)
    line = json.loads(data)
    assert status == 200 and line["missing_glyphs"] == ["U+4E2D"] and line["height"] == line_height, line
    assert headers.get("x-quill-missing-glyphs") == '["U+4E2D"]', headers


def print_serve_errors(temp_dir: str, max_tracebacks: int = 6) -> None:
    """On failure: the end of each traceback in the Serve logs (they vanish with the temp dir)."""
    shown = 0
    for path in sorted(Path(temp_dir).glob("ray/session_*/logs/serve/*.log")):
        lines = path.read_text(errors="replace").splitlines()
        i = 0
        while i < len(lines) and shown < max_tracebacks:
            if not lines[i].startswith("Traceback"):
                i += 1
                continue
            end = i + 1
            while end < len(lines) and (lines[end].startswith(" ") or lines[end].startswith("Traceback")):
                end += 1
            print(f"--- {path.name}: {lines[i - 1][:200] if i else ''}", flush=True)
            print("\n".join(lines[max(i, end - 6):end + 1]), flush=True)
            shown += 1
            i = end


def run() -> int:
    started = time.monotonic()
    try:
        import ray
        from ray import serve
        from ray.cluster_utils import Cluster
        import quill
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    if getattr(quill, "FAKE", False):
        log("WARNING: a development stand-in for quill is on the path, not the real bindings")

    # Every Ray process on this machine imports the app from deploy/ray, as a KubeRay image does.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DEPLOY_DIR), os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, str(DEPLOY_DIR))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    temp_dir = tempfile.mkdtemp(prefix="quill-ray-")  # sessions, logs, sockets: apart from any other Ray
    os.environ["RAY_TMPDIR"] = temp_dir
    cluster = None
    state = {"cluster": None}
    failed = [False]

    def hard_stop():  # the run's time limit: stop every Ray process we started, then fail
        log(f"FAIL: the test ran over {TOTAL_TIMEOUT_S:.0f} s; stopping the cluster")
        faulthandler.dump_traceback(all_threads=True)
        stopper = threading.Thread(target=lambda: state["cluster"] and state["cluster"].shutdown(), daemon=True)
        stopper.start()
        stopper.join(30)
        os._exit(1)

    watchdog = threading.Timer(TOTAL_TIMEOUT_S, hard_stop)
    watchdog.daemon = True
    watchdog.start()
    try:
        t0 = time.monotonic()
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False})
        state["cluster"] = cluster
        for _ in range(2):
            cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        cluster.wait_for_nodes(timeout=60)
        ray.init(address=cluster.address, log_to_driver=False)
        cluster_s = time.monotonic() - t0
        log(f"cluster up in {cluster_s:.1f} s: {ray.cluster_resources()}")

        from quill_serve_app import app_builder
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port}, proxy_location="HeadOnly")
        t1 = time.monotonic()
        args = {"worker_replicas": 2, "worker_num_cpus": 1, "threads": 1, "max_batch": 4,
                "batch_wait_timeout_s": 0.05, "max_queued_requests": 256}
        if os.environ.get("QUILL_RAY_TEST_MODEL"):
            args["model_dir"] = os.environ["QUILL_RAY_TEST_MODEL"]
        serve.run(app_builder(args), name=APP, route_prefix="/", blocking=False)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            status, _, data = http("GET", f"{base}/readyz", timeout=10)
            if status == 200:
                break
            assert time.monotonic() < deadline, f"/readyz not 200 within 120 s: {data[:300]!r}"
            time.sleep(0.5)
        ready = json.loads(data)
        deploy_s = time.monotonic() - t1
        line_height = int(ready["line_height"])
        log(f"app ready in {deploy_s:.1f} s: model {ready['model']}, device {ready['device']}, "
            f"line height {line_height}")
        check_api(base, ready)
        check_forms_steps_glyphs(base, ready)
        replicas_before = worker_replica_actors(ray)
        assert len(replicas_before) == 2, f"expected 2 worker replicas, found {replicas_before}"

        # ---- the load, with one replica killed mid-way ----
        out = Outcome()
        done_count = [0]
        kill_after = max(4, N_LINES // 4)
        killed = threading.Event()

        def one_line(i: int) -> None:
            try:
                status, headers, data = http("POST", f"{base}/v1/lines", line_request(i))
            except Exception as e:  # noqa: BLE001 - a transport failure is a lost request
                with out.lock:
                    out.failures.append(f"line {i}: no answer: {type(e).__name__}: {e}")
                return
            out.record_line(i, status, headers, data, line_height)
            with out.lock:
                done_count[0] += 1

        t2 = time.monotonic()
        with cf.ThreadPoolExecutor(CLIENTS) as pool:
            line_futures = [pool.submit(one_line, i) for i in range(N_LINES)]
            job_futures = [pool.submit(run_job, base, i, line_height) for i in range(N_JOBS)]
            while done_count[0] < kill_after and not all(f.done() for f in line_futures):
                time.sleep(0.05)
            victim = next(iter(out.replicas.most_common(1)), (next(iter(replicas_before)), 0))[0]
            victim = victim if victim in replicas_before else next(iter(replicas_before))
            how = kill_replica(ray, replicas_before[victim])
            t_kill = time.monotonic()
            killed.set()
            log(f"killed replica {victim} ({how}) after {done_count[0]} of {N_LINES} lines")
            cf.wait(line_futures + job_futures, timeout=REQUEST_TIMEOUT_S * 2)
            jobs = Counter()
            for f in job_futures:
                try:
                    jobs[f.result(timeout=1)] += 1
                except Exception as e:  # noqa: BLE001
                    out.failures.append(f"job: {e}")
        load_s = time.monotonic() - t2

        # ---- recovery ----
        recovered_s = None
        while time.monotonic() - t_kill < RECOVERY_TIMEOUT_S:
            now = worker_replica_actors(ray)
            if victim not in now and len(now) == 2 and running_workers(serve) == 2:
                recovered_s = time.monotonic() - t_kill
                break
            time.sleep(0.25)
        after = worker_replica_actors(ray)
        new_replicas = set(after) - set(replicas_before)
        post = Outcome()
        if recovered_s is not None:
            with cf.ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda i: post.record_line(i, *http("POST", f"{base}/v1/lines", {
                    "text": TEXTS[i % len(TEXTS)], "seed": 500 + i, "steps": STEPS}), line_height), range(8)))

        mismatches = compare_with_library(quill, ready["model"], out.lines)
        in_flight = out.retried + out.errors["503:replica_failed"]
        if in_flight == 0:
            log("WARNING: no request was in flight on the killed replica; the failover went unexercised")
        summary = {"lines": N_LINES, "ok": out.ok, "errors": dict(out.errors), "retried_ok": out.retried,
                   "batch_sizes": dict(out.batch_sizes), "library_mismatches": len(mismatches),
                   "lost": len(out.failures), "jobs": dict(jobs), "served_by": dict(out.replicas),
                   "killed": victim, "kill": how, "new_replicas": sorted(new_replicas),
                   "recovery_s": None if recovered_s is None else round(recovered_s, 1),
                   "after_recovery_ok": post.ok, "after_recovery_served_by": dict(post.replicas),
                   "cluster_start_s": round(cluster_s, 1), "deploy_ready_s": round(deploy_s, 1),
                   "load_s": round(load_s, 1), "steps": STEPS, "fake_quill": bool(getattr(quill, "FAKE", False))}
        log("summary " + json.dumps(summary))
        problems = list(out.failures) + list(post.failures) + mismatches
        unanswered = N_LINES - out.ok - sum(out.errors.values()) - len(out.failures)
        if unanswered:
            problems.append(f"{unanswered} lines got no answer at all")
        if out.ok < N_LINES * 3 // 4:
            problems.append(f"only {out.ok} of {N_LINES} lines succeeded (errors: {dict(out.errors)})")
        unexpected = {k: v for k, v in out.errors.items() if k not in EXPECTED_ERRORS}
        unexpected.update({k: v for k, v in jobs.items() if k != "done" and k.split()[-1] not in EXPECTED_ERRORS})
        if unexpected:
            problems.append(f"errors a replica failure does not explain: {unexpected}")
        if sum(jobs.values()) != N_JOBS:
            problems.append(f"{N_JOBS - sum(jobs.values())} jobs did not end")
        if recovered_s is None:
            problems.append(f"Serve did not restore 2 RUNNING worker replicas within {RECOVERY_TIMEOUT_S} s "
                            f"(now {after}, running {running_workers(serve)})")
        elif post.ok != 8:
            problems.append(f"after recovery only {post.ok} of 8 lines succeeded ({dict(post.errors)})")
        for p in problems:
            log(f"FAIL: {p}")
        failed[0] = bool(problems)
        return 1 if problems else 0
    except AssertionError as e:
        log(f"FAIL: {e}")
        failed[0] = True
        return 1
    except BaseException:
        failed[0] = True
        raise
    finally:
        t3 = time.monotonic()
        for step in (serve.shutdown, ray.shutdown, cluster.shutdown if cluster is not None else None):
            if step is None or (step is serve.shutdown and not ray.is_initialized()):
                continue
            th = threading.Thread(target=step, daemon=True)
            th.start()
            th.join(60)
            if th.is_alive():
                log(f"WARNING: {step.__qualname__} did not return within 60 s")
        watchdog.cancel()
        if failed[0]:
            print_serve_errors(temp_dir)
        if os.environ.get("QUILL_RAY_TEST_KEEP"):
            log(f"Ray logs kept in {temp_dir}")
        else:
            shutil.rmtree(temp_dir, ignore_errors=True)
        log(f"shutdown {time.monotonic() - t3:.1f} s; wall time {time.monotonic() - started:.1f} s")


def test_ray_serve():
    import pytest
    rc = run()
    if rc == SKIP:
        pytest.skip("ray or quill cannot be imported")
    assert rc == 0


if __name__ == "__main__":
    sys.exit(run())
