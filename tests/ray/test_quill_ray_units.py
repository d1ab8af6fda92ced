#!/usr/bin/env python3
"""Fast checks of the Ray Serve app's pieces without a cluster (seconds): request parsing (JSON and
multipart/form-data) against quill serve's rules, the failover of calls and streams (retry once on
a lost replica, then a clear 503), the job store's step events and cancel, the worker's step hook.

    build/venv-py/bin/python -m pytest tests/ray/test_quill_ray_units.py
    build/venv-py/bin/python tests/ray/test_quill_ray_units.py     # exit 0 pass, 77 skip
"""

import asyncio
import base64
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "ray"))

try:
    import pytest
except ImportError:  # standalone runs need no pytest
    pytest = None


def _ray_or_skip():
    try:
        import ray.exceptions  # noqa: F401
        import fastapi  # noqa: F401
    except ImportError as e:
        if pytest is not None:
            pytest.skip(f"ray[serve] cannot be imported: {e}")
        raise SystemExit(77)


def parse(body: dict):
    from quill_ray_request import Limits, parse_line_request
    return parse_line_request(body, Limits(), random_seed=12345)


def refusal(body: dict):
    from quill_ray_request import ApiError
    try:
        parse(body)
    except ApiError as e:
        return e.status, e.code, e.field
    return None


def test_parse_refusals_match_quill_serve():
    cases = [({"stepz": 1, "text": "x"}, (422, "unknown_field", "stepz")),
             ({}, (422, "missing_field", "text")),
             ({"text": ""}, (422, "invalid_text", "text")),
             ({"text": "\ud800"}, (422, "invalid_text", "text")),
             ({"text": "å" * 301}, (422, "text_too_long", "text")),
             ({"text": 5}, (422, "invalid_type", "text")),
             ({"text": "x", "seed": True}, (422, "invalid_type", "seed")),
             ({"text": "x", "seed": 1.5}, (422, "invalid_type", "seed")),
             ({"text": "x", "seed": -1}, (422, "out_of_range", "seed")),
             ({"text": "x", "seed": 2 ** 53}, (422, "out_of_range", "seed")),
             ({"text": "x", "steps": 101}, (422, "out_of_range", "steps")),
             ({"text": "x", "cfg": 50.5}, (422, "out_of_range", "cfg")),
             ({"text": "x", "start_sigma": 0}, (422, "out_of_range", "start_sigma")),
             ({"text": "x", "shift": 0}, (422, "out_of_range", "shift")),
             ({"text": "x", "timeout_s": 0.5}, (422, "out_of_range", "timeout_s")),
             ({"text": "x", "clamp_overflow": 1}, (422, "invalid_type", "clamp_overflow")),
             ({"text": "x", "response_format": "gif"}, (422, "invalid_value", "response_format")),
             ({"text": "x", "style": "aGk=", "style_id": "none"}, (422, "conflicting_fields", "style_id")),
             ({"text": "x", "style": "a$b"}, (422, "invalid_base64", "style")),
             ({"text": "x", "style": "data:image/png,abc"}, (422, "invalid_image", "style")),
             ({"text": "x", "style_id": "s0123"}, (404, "unknown_style", "style_id"))]
    for body, want in cases:
        assert refusal(body) == want, (body, refusal(body))


def test_parse_accepts_and_fills():
    spec = parse({"text": "Hej", "seed": 7.0, "steps": 4, "cfg": 0, "shift": 3, "start_sigma": 1,
                  "clamp_overflow": False, "response_format": "json", "timeout_s": 60, "style_id": None})
    assert (spec.text, spec.seed, spec.steps, spec.cfg, spec.shift, spec.start_sigma) == ("Hej", 7, 4, 0.0, 3.0, 1.0)
    assert spec.json_response and spec.timeout_s == 60 and spec.style_id == "default" and not spec.style_id_given
    assert parse({"text": "Hej"}).seed == 12345 and parse({"text": "Hej"}).steps is None
    png = b"\x89PNG\r\n\x1a\nrest"
    assert parse({"text": "x", "style": "data:image/png;base64," + base64.b64encode(png).decode()}).style_bytes == png
    assert parse({"text": "x", "style": base64.b64encode(png).decode().rstrip("=") + "\n"}).style_bytes == png


def test_body_and_image_checks():
    from quill_ray_body import parse_json_body
    from quill_ray_request import ApiError, Limits, decode_style_image

    def code(fn):
        try:
            fn()
        except ApiError as e:
            return e.status, e.code
        return None

    lim = Limits(max_body_bytes=1000)
    assert code(lambda: parse_json_body(b"x" * 1001, "application/json", lim)) == (413, "body_too_large")
    assert code(lambda: parse_json_body(b"{}", "text/plain", lim)) == (415, "unsupported_media_type")
    assert code(lambda: parse_json_body(b"", "application/json", lim)) == (400, "invalid_json")
    assert code(lambda: parse_json_body(b'{"text": NaN}', "", lim)) == (400, "invalid_json")
    assert code(lambda: parse_json_body(b"[" * 40 + b"]" * 40, "", lim)) == (400, "invalid_json")
    assert code(lambda: parse_json_body(b"[1]", "", lim)) == (400, "invalid_json")
    assert parse_json_body(b'{"text": "x"}', "application/json; charset=utf-8", lim) == {"text": "x"}
    try:
        from PIL import Image
    except ImportError:
        return
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buf, format="PNG")
    assert decode_style_image(buf.getvalue(), 40 * 30).shape == (30, 40, 3)
    assert code(lambda: decode_style_image(buf.getvalue(), 40 * 30 - 1)) == (413, "image_too_large")
    assert code(lambda: decode_style_image(b"not an image", 10)) == (422, "invalid_image")


B = "b0und4ry"
MULTIPART = f"multipart/form-data; boundary={B}"


def form(*parts, end: bool = True) -> bytes:
    """A multipart/form-data body of (name, value) text parts and (name, value, filename) file parts."""
    out = b""
    for name, value, *filename in parts:
        out += f'--{B}\r\nContent-Disposition: form-data; name="{name}"'.encode()
        out += f'; filename="{filename[0]}"'.encode() if filename else b""
        out += b"\r\n\r\n" + value + b"\r\n"
    return out + (f"--{B}--\r\n".encode() if end else b"")


def tiny_png(width: int, height: int, pixels: bool = True) -> bytes:
    """A PNG of that size; pixels=False: its header only (what the size check reads)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = zlib.compress(b"".join(b"\0" + b"\xff" * width for _ in range(height))) if pixels else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + (chunk(b"IDAT", rows) if pixels else b"") + chunk(b"IEND", b""))


def parse_any(raw: bytes, content_type: str):
    from quill_ray_body import parse_body
    from quill_ray_request import Limits, parse_line_request
    body, style_file = parse_body(raw, content_type, Limits())
    return parse_line_request(body, Limits(), 12345, style_file)


def test_multipart_is_the_json_request():
    import json
    png = tiny_png(8, 4)
    as_json = parse_any(json.dumps({"text": "Hej \u4e2d", "seed": 3, "steps": 4, "cfg": 2.5, "clamp_overflow": True,
                                    "response_format": "json", "style": base64.b64encode(png).decode()}).encode(),
                        "application/json")
    as_form = parse_any(form(("text", "Hej \u4e2d".encode()), ("seed", b"3"), ("steps", b" 4"), ("cfg", b"2.5"),
                             ("clamp_overflow", b"true"), ("response_format", b"json"), ("style", png, "me.png")),
                        MULTIPART)
    assert as_form == as_json and as_form.style_id == "inline" and as_form.style_bytes == png
    # the style part is the file even without a filename; a text part with an empty filename is text
    assert parse_any(form(("text", b"Hej"), ("style", png)), MULTIPART).style_bytes == png
    assert parse_any(form(("text", b"Hej", "")), MULTIPART).text == "Hej"
    assert parse_any(form(("text", b"A"), ("text", b"Hej")), MULTIPART).text == "Hej"  # the last part wins


def test_multipart_refusals_match_quill_serve():
    """Each case as the real `quill serve` answered it (status, code, field), compared by hand."""
    from quill_ray_request import ApiError
    png = tiny_png(8, 4)
    cases = [(form(("text", b"Hej", "t.txt")), (422, "unknown_field", "text")),
             (form(("text", b"Hej"), ("zzz", b"x", "z.bin"), ("aaa", b"x", "a.bin")), (422, "unknown_field", "aaa")),
             (form(("text", b"Hej"), ("clamp_overflow", b"1")), (422, "invalid_type", "clamp_overflow")),
             (form(("text", b"Hej"), ("steps", b"abc")), (422, "invalid_type", "steps")),
             (form(("text", b"Hej"), ("steps", b"2.5")), (422, "invalid_type", "steps")),
             (form(("text", b"Hej"), ("cfg", b"NaN")), (422, "invalid_type", "cfg")),
             (form(("text", b"Hej"), ("cfg", b"1e400")), (422, "invalid_type", "cfg")),
             (form(("text", b"Hej"), ("seed", b'"5"')), (422, "invalid_type", "seed")),
             (form(("text", b"Hej"), ("steps", b"x"), ("cfg", b"y")), (422, "invalid_type", "cfg")),  # sorted
             (form(("text", b"Hej"), ("steps", b"0")), (422, "out_of_range", "steps")),
             (form(("text", b"Hej"), ("stepz", b"3")), (422, "unknown_field", "stepz")),
             (form(("steps", b"3")), (422, "missing_field", "text")),
             (form(("text", b"H\xffj")), (422, "invalid_text", "text")),
             (form(("text", b"Hej"), ("style", png, "s.png"), ("style_id", b"none")),
              (422, "conflicting_fields", "style_id")),
             (form(("text", b"Hej"), ("style_id", b"nope")), (404, "unknown_style", "style_id")),
             (f'--{B}\r\nContent-Disposition: form-data\r\n\r\nHej\r\n--{B}--\r\n'.encode(),
              (422, "unknown_field", None)),
             (form(("text", b"Hej"), end=False), (400, "bad_request", None)),
             (b"garbage", (400, "bad_request", None)),
             (b"", (400, "bad_request", None))]
    for raw, want in cases:
        try:
            parse_any(raw, MULTIPART)
            got = None
        except ApiError as e:
            got = (e.status, e.code, e.field)
        assert got == want, (raw[:120], got)
    try:
        parse_any(form(("text", b"Hej")), "multipart/form-data")  # no boundary
    except ApiError as e:
        assert (e.status, e.code) == (400, "bad_request")


def test_read_body_stops_at_the_limit():
    from quill_ray_body import read_body
    from quill_ray_request import ApiError, Limits

    class _Request:
        def __init__(self, chunks, length=None):
            self.chunks, self.read = chunks, 0
            self.headers = {} if length is None else {"content-length": str(length)}

        async def stream(self):
            for c in self.chunks:
                self.read += 1
                yield c

    def code(request):
        try:
            return asyncio.run(read_body(request, Limits(max_body_bytes=1000)))
        except ApiError as e:
            return e.status, e.code

    assert code(_Request([b"x" * 600, b"y" * 400])) == b"x" * 600 + b"y" * 400
    endless = _Request([b"x" * 600] * 100)  # chunked: no Content-Length
    assert code(endless) == (413, "body_too_large") and endless.read == 2
    declared = _Request([b"x"], length=1001)
    assert code(declared) == (413, "body_too_large") and declared.read == 0
    try:
        from PIL import Image  # noqa: F401
    except ImportError:
        return
    from quill_ray_request import decode_style_image
    try:  # the pixel count is checked from the header, before any decoding
        decode_style_image(tiny_png(5000, 4000, pixels=False), 4096 * 4096)
        raise AssertionError("a 20 Mpixel style was accepted")
    except ApiError as e:
        assert (e.status, e.code, e.field) == (413, "image_too_large", "style")


class _Call:
    """A DeploymentResponse stand-in: awaitable, cancellable."""

    def __init__(self, outcome):
        self.outcome, self.cancelled = outcome, False

    def __await__(self):
        async def run():
            if isinstance(self.outcome, float):
                await asyncio.sleep(self.outcome)
                return "late"
            if isinstance(self.outcome, BaseException):
                raise self.outcome
            return self.outcome
        return run().__await__()

    def cancel(self):
        self.cancelled = True


class _Stream:
    """A DeploymentResponseGenerator stand-in: its items (a float: a pause that long; an exception:
    raised), cancellable."""

    def __init__(self, items):
        self.items, self.cancelled = list(items), False

    def __aiter__(self):
        return self

    async def __anext__(self):
        while self.items and isinstance(self.items[0], float):
            await asyncio.sleep(self.items.pop(0))
        if not self.items:
            raise StopAsyncIteration
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self):
        self.cancelled = True


class _Handle:
    """A DeploymentHandle stand-in: each call takes the next outcome (a list: a streamed call)."""

    def __init__(self, *outcomes):
        self.outcomes, self.calls = list(outcomes), []

    def options(self, **_):
        return self

    def __getattr__(self, method):
        handle = self

        class _Method:
            def remote(self, *args):
                outcome = handle.outcomes.pop(0)
                call = _Stream(outcome) if isinstance(outcome, list) else _Call(outcome)
                handle.calls.append(call)
                return call
        return _Method()


def failover(*outcomes, timeout_s=5.0):
    from quill_ray_request import ApiError
    from quill_ray_failover import call_with_failover
    handle = _Handle(*outcomes)
    try:
        return asyncio.run(call_with_failover(handle, "generate", timeout_s=timeout_s)), handle
    except ApiError as e:
        return (e.status, e.code), handle


def test_failover():
    _ray_or_skip()
    from ray.exceptions import ActorDiedError
    from ray.serve.exceptions import BackPressureError

    assert failover({"png": b"x"})[0] == ({"png": b"x"}, 1)
    assert failover(ActorDiedError(), {"png": b"x"})[0] == ({"png": b"x"}, 2)       # retried once
    assert failover(ActorDiedError(), ActorDiedError())[0] == (503, "replica_failed")  # then a clear error
    assert failover(BackPressureError(65, 64))[0] == (429, "queue_full")
    result, handle = failover(1.0, timeout_s=0.2)
    assert result == (504, "deadline_exceeded") and handle.calls[0].cancelled


def test_stream_failover_retries_a_lost_stream():
    _ray_or_skip()
    from ray.exceptions import ActorDiedError
    from quill_ray_failover import stream_with_failover
    from quill_ray_request import ApiError

    def run(*outcomes):
        items = []
        try:
            out = asyncio.run(stream_with_failover(_Handle(*outcomes), "generate_stream", timeout_s=5,
                                                   on_item=lambda item, attempt: items.append((attempt, item))))
        except ApiError as e:
            out = (e.status, e.code)
        return out, items

    out, items = run([{"step": 0}, ActorDiedError()], [{"step": 0}, {"step": 1}, {"png": b"x"}])
    assert out == ({"png": b"x"}, 2) and items == [(1, {"step": 0}), (2, {"step": 0}), (2, {"step": 1}),
                                                    (2, {"png": b"x"})]
    assert run([ActorDiedError()], [{"step": 0}, ActorDiedError()])[0] == (503, "replica_failed")


def _job_store(*outcomes):
    from quill_ray_jobs import JobStore
    handle = _Handle(*outcomes)
    return JobStore.func_or_class(handle), handle


async def _follow(store, job_id: str) -> list:
    """The job's SSE events as the ingress follows them: its state now, then every change."""
    events = await store.events(job_id, -1, 0.0)
    while events[-1][1] not in ("done", "failed", "cancelled"):
        events += await store.events(job_id, events[-1][0], 5.0)
    return events


def test_job_store_reports_every_step():
    _ray_or_skip()
    from quill_ray_request import LineSpec
    steps = [{"step": i, "steps": 3, "batch_size": 2} for i in range(4)]
    result = {"png": b"png", "width": 48, "height": 32, "batch_size": 2, "missing_glyphs": [0x4E2D]}

    async def scenario():
        store, _ = _job_store([0.05] + steps[:2] + [0.05] + steps[2:] + [result])
        job = await store.submit(LineSpec("Hej \u4e2d", 1), {"bucket_width": 48, "style_id": "none", "steps": 3})
        assert (job["state"], job["step"], job["steps"]) == ("queued", 0, 3)
        return await _follow(store, job["id"]), store.get(job["id"])

    events, view = asyncio.run(scenario())
    assert [(kind, data.get("step")) for _, kind, data in events] == \
        [("queued", None), ("step", 0), ("step", 1), ("step", 2), ("step", 3), ("done", None)]
    assert [v for v, _, _ in events] == sorted({v for v, _, _ in events})
    assert events[1][2] == {"id": view["id"], "state": "running", "step": 0, "steps": 3, "batch_size": 2}
    assert events[-1][2]["missing_glyphs"] == ["U+4E2D"] and view["missing_glyphs"] == ["U+4E2D"]
    assert (view["state"], view["step"], view["steps"], view["batch_size"]) == ("done", 3, 3, 2)


def test_job_store_cancels_a_running_job():
    _ray_or_skip()
    from quill_ray_request import LineSpec

    async def scenario():
        running = [{"step": i, "steps": 20, "batch_size": 1} for i in (0, 1)]
        store, handle = _job_store(running + [30.0, {"png": b"late"}])
        job = await store.submit(LineSpec("Hej", 1), {"bucket_width": 48, "style_id": "none", "steps": 20})
        while store.get(job["id"])["step"] < 1:
            await asyncio.sleep(0.01)
        cancelled = await store.cancel(job["id"])
        again = await store.cancel(job["id"])
        return cancelled, again, await _follow(store, job["id"]), handle.calls[0].cancelled

    cancelled, again, events, stream_cancelled = asyncio.run(scenario())
    assert cancelled["state"] == "cancelled" and cancelled["error"]["code"] == "cancelled"
    assert stream_cancelled  # the worker's stream is cancelled: its batch stops once no row is wanted
    assert again["api_error"]["code"] == "already_ended"
    assert events[-1][1] == "cancelled" and events[-1][2]["error"]["code"] == "cancelled"


def test_step_callback_never_waits_and_stops_an_abandoned_batch():
    _ray_or_skip()
    from quill_ray_worker import LineStudioWorker, _Row

    async def scenario():
        loop = asyncio.get_running_loop()
        streamed = _Row("a", None, 1, (), 48, "none", events=asyncio.Queue())
        plain = _Row("b", None, 2, (), 48, "none")
        on_step = LineStudioWorker.func_or_class._step_callback([streamed, plain], loop)
        # called from another thread, as generate_rows calls it from the model thread
        wanted = await loop.run_in_executor(None, lambda: [on_step(i, 2) for i in (1, 2)])
        got = [await asyncio.wait_for(streamed.events.get(), 5) for _ in range(2)]
        streamed.abandoned = True
        still = on_step(2, 2)
        plain.abandoned = True
        return wanted, got, still, on_step(2, 2)

    wanted, got, still, stop = asyncio.run(scenario())
    assert wanted == [True, True] and still is True and stop is False
    assert got == [{"step": 1, "steps": 2, "batch_size": 2}, {"step": 2, "steps": 2, "batch_size": 2}]


class _FakeStudio:
    """generate_rows as the binding behaves: progress(step, steps) after each step, stopping with
    Cancelled when it returns False; rows of 1 x 1 pixels, "\u4e2d" reported as missing."""

    class Cancelled(Exception):
        pass

    defaults = {"steps": 20}

    def __init__(self, step_s: float = 0.0):
        self.step_s, self.calls, self.steps_run = step_s, [], 0

    def generate_rows(self, rows, *, steps, progress, with_missing, **_):
        import numpy as np
        self.calls.append([text for text, _, _ in rows])
        for i in range(1, steps + 1):
            time.sleep(self.step_s)
            self.steps_run += 1
            if progress(i, steps) is False:
                raise _FakeStudio.Cancelled("cancelled")
        return [(np.zeros((1, 1), np.uint8), [0x4E2D] if "\u4e2d" in text else []) for text, _, _ in rows]


def _worker(studio: _FakeStudio):
    """A LineStudioWorker on a stand-in studio, without Serve (its model loop and step hook only)."""
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace
    from quill_ray_worker import LineStudioWorker
    w = object.__new__(LineStudioWorker.func_or_class)
    w._studio, w._quill = studio, SimpleNamespace(encode_png=lambda img: b"png", Cancelled=_FakeStudio.Cancelled)
    w._gen, w._max_batch, w._ragged_band_px, w._replica = ThreadPoolExecutor(1), 4, 0, "r1"
    w._pending, w._work, w._model_task, w._busy_since = [], asyncio.Event(), None, None
    return w


def test_model_loop_streams_steps_and_skips_abandoned_rows():
    _ray_or_skip()
    from quill_ray_worker import _Row
    studio = _FakeStudio()

    async def scenario():
        w = _worker(studio)
        wanted = _Row("Hej \u4e2d", None, 1, (3, None, None, None, False), 48, "none", events=asyncio.Queue())
        gone = _Row("gone", None, 2, (3, None, None, None, False), 48, "none", abandoned=True)
        results = await asyncio.wait_for(w._run_batch([wanted, gone]), 5)
        return results, [wanted.events.get_nowait() for _ in range(wanted.events.qsize())]

    (line, skipped), steps = asyncio.run(scenario())
    assert studio.calls == [["Hej \u4e2d"]]  # the abandoned row was answered, not run
    assert line["missing_glyphs"] == [0x4E2D] and line["batch_size"] == 1
    assert skipped["api_error"]["code"] == "cancelled"
    assert steps == [{"step": i, "steps": 3, "batch_size": 1} for i in range(4)]


def test_model_loop_stops_a_batch_nobody_wants():
    _ray_or_skip()
    from quill_ray_worker import _Row
    studio = _FakeStudio(step_s=0.01)

    async def scenario():
        w = _worker(studio)
        row = _Row("Hej", None, 1, (100, None, None, None, False), 48, "none", events=asyncio.Queue())
        batch = asyncio.create_task(w._run_batch([row]))
        while (await row.events.get())["step"] < 2:
            pass
        row.abandoned = True  # as generate_stream does when its caller cancels it
        return await asyncio.wait_for(batch, 5)

    [result] = asyncio.run(scenario())
    assert result["api_error"]["code"] == "cancelled" and studio.steps_run < 20


if __name__ == "__main__":
    _ray_or_skip()
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
