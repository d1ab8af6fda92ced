"""Request bodies of POST /v1/lines and /v1/jobs as `quill serve` reads them (read_body in
src/serve/line_routes.cpp): a JSON object, or multipart/form-data whose text parts are the JSON
fields and whose file part `style` is the style image. Either way the result is one dict for
`parse_line_request`, plus the style file's bytes, so both forms go through one validator.
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header

from quill_ray_request import BOOL, INTEGER, LINE_FIELDS, NUMBER, ApiError, Limits

MAX_JSON_DEPTH = 32
STYLE_FILE_FIELD = "style"


def body_too_large(limits: Limits) -> ApiError:
    return ApiError(413, "body_too_large", f"the request body is over the limit of {limits.max_body_bytes} bytes")


async def read_body(request: Any, limits: Limits) -> bytes:
    """A Starlette request's body, refused (413) as soon as it is over the limit, whether its
    Content-Length says so or its chunks add up to it: an oversized upload is never held whole."""
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limits.max_body_bytes:
        raise body_too_large(limits)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise body_too_large(limits)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_body(raw: bytes, content_type: str, limits: Limits) -> tuple[dict, Optional[bytes]]:
    """-> (the body as JSON fields, the style file part or None), or the ApiError quill serve answers."""
    if len(raw) > limits.max_body_bytes:
        raise body_too_large(limits)
    ctype = (content_type or "").strip()
    if ctype.startswith("multipart/form-data"):
        fields, files = parse_multipart(raw, ctype, STYLE_FILE_FIELD)
        return form_to_body(fields), files.get(STYLE_FILE_FIELD)
    return parse_json_body(raw, ctype, limits), None


# ---- JSON ----

def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"number overflow parsing '{text[:40]}'")
    return x


class _Unacceptable(ValueError):
    """Valid JSON that quill serve's parser refuses all the same."""


def _unique_keys(pairs: list) -> dict:
    d: dict = {}
    for key, value in pairs:
        if key in d:  # json.loads would keep the last one silently
            raise _Unacceptable(f'duplicate key "{key}"')
        d[key] = value
    return d


def loads_strict(text: str) -> Any:
    """json.loads with quill serve's parser's rules: no NaN/Infinity, no overflowing numbers, no
    duplicate keys. Raises ValueError or RecursionError."""
    return json.loads(text, parse_constant=_no_constants, parse_float=_finite, object_pairs_hook=_unique_keys)


def _depth(v: Any) -> int:
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def parse_json_body(raw: bytes, content_type: str, limits: Limits) -> dict:
    """The body as a JSON object, or the ApiError quill serve answers for it."""
    if len(raw) > limits.max_body_bytes:
        raise body_too_large(limits)
    ctype = (content_type or "").strip()
    if ctype and not ctype.startswith("application/json"):
        raise ApiError(415, "unsupported_media_type",
                       f"send application/json or multipart/form-data, not '{ctype[:80]}'")
    if not raw:
        raise ApiError(400, "invalid_json", "the request body is empty (a JSON object is expected)")
    try:
        body = loads_strict(raw.decode("utf-8"))
    except _Unacceptable as e:
        raise ApiError(400, "invalid_json", f"request body is not acceptable JSON: {e}"[:300]) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {e}"[:300]) from None
    if _depth(body) > MAX_JSON_DEPTH:
        raise ApiError(400, "invalid_json", f"request body is not acceptable JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", "the request body must be a JSON object")
    return body


# ---- multipart/form-data ----

def _malformed() -> ApiError:
    return ApiError(400, "bad_request", "malformed HTTP request")  # what quill serve's HTTP layer answers


def parse_multipart(raw: bytes, content_type: str, file_field: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """A multipart/form-data body -> (text parts, file parts), name -> bytes, the last part of a
    name winning. As quill serve: a part with a filename, or named `file_field`, is a file, and a
    file part under any other name is refused (422 unknown_field); a malformed body is a 400."""
    boundary = parse_options_header(content_type)[1].get(b"boundary")
    if not boundary:
        raise _malformed()
    parts: list[tuple[str, bytes, bytes]] = []  # (name, filename, content)
    headers: dict[bytes, bytes] = {}
    header_name: list[bytes] = []
    header_value: list[bytes] = []
    data: list[bytes] = []

    def part_begin():
        headers.clear()
        data.clear()

    def header_end():
        headers[b"".join(header_name).strip().lower()] = b"".join(header_value).strip()
        header_name.clear()
        header_value.clear()

    def part_end():  # a part without a name is named "" (quill serve then refuses it as an unknown field)
        options = parse_options_header(headers.get(b"content-disposition"))[1]
        name = options.get(b"name", b"").decode("utf-8", "replace")
        parts.append((name, options.get(b"filename", b""), b"".join(data)))

    parser = MultipartParser(boundary, {
        "on_part_begin": part_begin,
        "on_header_field": lambda d, start, end: header_name.append(d[start:end]),
        "on_header_value": lambda d, start, end: header_value.append(d[start:end]),
        "on_header_end": header_end,
        "on_part_data": lambda d, start, end: data.append(d[start:end]),
        "on_part_end": part_end,
    })
    try:
        parser.write(raw)
    except FormParserError:
        raise _malformed() from None
    if parser.state != MultipartState.END:  # truncated: no closing boundary
        raise _malformed()

    fields: dict[str, bytes] = {}
    files: dict[str, bytes] = {}
    for name, filename, content in sorted(parts, key=lambda p: p[0]):  # quill serve's parts are a sorted multimap
        if filename or name == file_field:
            if name != file_field:
                raise ApiError(422, "unknown_field",
                               f"unexpected file part '{name[:60]}' (only '{file_field}' takes a file)", name[:60])
            files[name] = content
        else:
            fields[name] = content
    return fields, files


def _form_number(value: str) -> Optional[float]:
    try:
        x = loads_strict(value)
    except (ValueError, RecursionError):
        return None
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def form_to_body(fields: dict[str, bytes]) -> dict:
    """Text parts -> the JSON body they stand for (quill serve's form_to_json): numbers and
    booleans take the JSON types of their fields; unknown names pass as strings for
    parse_line_request to name. Text that is not UTF-8 stays detectable (surrogateescape), so it
    is refused as invalid_text, as in JSON."""
    body: dict[str, Any] = {}
    for name in sorted(fields):
        kind = LINE_FIELDS.get(name)
        value = fields[name].decode("utf-8", "surrogateescape" if name == "text" else "replace")
        if kind == BOOL:
            if value not in ("true", "false"):
                raise ApiError(422, "invalid_type", f"{name} must be true or false, got '{value[:40]}'", name)
            body[name] = value == "true"
        elif kind in (INTEGER, NUMBER):
            number = _form_number(value)
            if number is None:
                raise ApiError(422, "invalid_type", f"{name} must be {kind}, got '{value[:40]}'", name)
            body[name] = number
        else:
            body[name] = value
    return body
