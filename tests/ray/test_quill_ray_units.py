#!/usr/bin/env python3
"""Fast checks of the Ray Serve app's pieces without a cluster (seconds): request parsing against
quill serve's rules, and the ingress's failover (retry once on a lost replica, then a clear 503).

    build/venv-py/bin/python -m pytest tests/ray/test_quill_ray_units.py
    build/venv-py/bin/python tests/ray/test_quill_ray_units.py     # exit 0 pass, 77 skip
"""

import asyncio
import base64
import io
import sys
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
    from quill_ray_request import ApiError, Limits, decode_style_image, parse_json_body

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


class _Handle:
    def __init__(self, *outcomes):
        self.outcomes, self.calls = list(outcomes), []

    def __getattr__(self, method):
        handle = self

        class _Method:
            def remote(self, *args):
                call = _Call(handle.outcomes.pop(0))
                handle.calls.append(call)
                return call
        return _Method()


def failover(*outcomes, timeout_s=5.0):
    from quill_ray_request import ApiError
    from quill_serve_app import call_with_failover
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


if __name__ == "__main__":
    _ray_or_skip()
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
