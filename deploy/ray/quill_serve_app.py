"""Quill's line studio as a Ray Serve application: the `/v1/lines` and `/v1/jobs` API of
`quill serve` (docs/API.md) over LineStudioWorker replicas spread across a Ray cluster.

    QuillIngress (FastAPI, stateless, N replicas) --> LineStudioWorker (quill.LineStudio, autoscaled)
          |                                                 ^ (streamed: step events, then the line)
          +--> JobStore (1 replica: job records, runs jobs) -+

This file: the ingress (routes, auth, errors, SSE) and `app_builder`. The others: the body and
field checks (quill_ray_body.py, quill_ray_request.py), the worker (quill_ray_worker.py), the job
store (quill_ray_jobs.py) and the calls between them (quill_ray_failover.py).

Run: `serve run deploy/ray/config.yaml` (see deploy/ray/README.md), or from Python
`serve.run(app_builder({...}))`. Import path for Serve: `quill_serve_app:app_builder`.
"""

import base64
import hmac
import json
import logging
import os
import re
import secrets
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from ray import serve
from ray.serve.handle import DeploymentHandle
from starlette.exceptions import HTTPException as StarletteHTTPException

from quill_ray_body import parse_body, read_body
from quill_ray_failover import call_with_failover
from quill_ray_jobs import FINAL_STATES, JobStore
from quill_ray_request import ApiError, Limits, LineSpec, missing_glyphs_json, parse_line_request
from quill_ray_worker import LineStudioWorker

logger = logging.getLogger("ray.serve")
JOB_ID = re.compile(r"[0-9a-z]{1,64}")
SSE_KEEP_ALIVE_S = 10.0


app = FastAPI(title="Quill line studio (Ray Serve)", openapi_url=None, docs_url=None, redoc_url=None)


def error_response(e: ApiError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


@app.exception_handler(ApiError)
async def _api_error(request: Request, e: ApiError) -> JSONResponse:
    return error_response(e)


@app.exception_handler(StarletteHTTPException)
async def _http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
    if e.status_code in (404, 405):
        return error_response(ApiError(404, "not_found", f"no route {request.method} {request.url.path[:200]}"))
    return error_response(ApiError(e.status_code, "http_error", f"HTTP status {e.status_code}"))


@app.exception_handler(Exception)
async def _internal_error(request: Request, e: Exception) -> JSONResponse:
    logger.exception("request failed")
    return error_response(ApiError(500, "internal", f"the server failed on this request: {type(e).__name__}: {e}"[:500]))


def _sse(version: int, kind: str, data: dict) -> str:
    return f"id: {version}\nevent: {kind}\ndata: {json.dumps(data, separators=(',', ':'), sort_keys=True)}\n\n"


def _png(data: bytes, headers: Optional[dict] = None) -> Response:
    return Response(content=data, media_type="image/png", headers=headers)


@serve.deployment(name="QuillIngress", max_ongoing_requests=256, ray_actor_options={"num_cpus": 0})
@serve.ingress(app)
class QuillIngress:
    def __init__(self, worker: DeploymentHandle, jobs: DeploymentHandle, limits: Optional[dict] = None,
                 api_key_env: str = "QUILL_API_KEY"):
        self._worker, self._jobs = worker, jobs
        self._limits = Limits.from_dict(limits)
        self._api_key = os.environ.get(api_key_env, "").strip() if api_key_env else ""
        if self._api_key and len(self._api_key) < 16:
            raise ValueError(f"${api_key_env} is set but shorter than 16 characters")

    def _authorize(self, request: Request) -> None:
        if not self._api_key:
            return
        auth = request.headers.get("authorization", "")
        given = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        if not hmac.compare_digest(self._api_key.encode(), given.encode()):
            raise ApiError(401, "unauthorized", "this server needs an API key: send 'Authorization: Bearer <key>'",
                           headers={"WWW-Authenticate": "Bearer"})

    async def _parse(self, request: Request) -> LineSpec:
        """A JSON or multipart/form-data body -> a checked LineSpec (ApiError otherwise)."""
        self._authorize(request)
        raw = await read_body(request, self._limits)
        body, style_file = parse_body(raw, request.headers.get("content-type", ""), self._limits)
        return parse_line_request(body, self._limits, secrets.randbits(53), style_file)

    async def _job_call(self, method: str, job_id: str, request: Request, *args: Any) -> Any:
        self._authorize(request)
        if not JOB_ID.fullmatch(job_id):
            raise ApiError(404, "not_found", f"no route {request.method} {request.url.path[:200]}")
        out, _ = await call_with_failover(self._jobs, method, job_id, *args, timeout_s=30, what="job store")
        if out is None:
            raise ApiError(404, "unknown_job", "no job with this id (finished jobs expire)", "id")
        return out

    @app.get("/healthz")
    async def healthz(self):
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(self) -> JSONResponse:
        try:
            info, _ = await call_with_failover(self._worker, "info", timeout_s=5)
        except ApiError as e:
            return JSONResponse({"ready": False, "stopping": False, "error": e.body()["error"]}, status_code=503,
                                headers={"Retry-After": "1"})
        return JSONResponse({"ready": True, "stopping": False, **info})

    @app.post("/v1/lines")
    async def lines(self, request: Request) -> Response:
        spec = await self._parse(request)
        out, attempts = await call_with_failover(self._worker, "generate", spec, timeout_s=spec.timeout_s)
        if "api_error" in out:
            raise ApiError.from_dict(out["api_error"])
        headers = {"X-Quill-Seed": str(spec.seed), "X-Quill-Batch-Size": str(out["batch_size"]),
                   "X-Quill-Replica": out["replica"], "X-Quill-Attempts": str(attempts)}
        missing = missing_glyphs_json(out["missing_glyphs"])
        if missing:  # the line shows a box for each of these characters
            headers["X-Quill-Missing-Glyphs"] = json.dumps(missing, separators=(",", ":"))
        if not spec.json_response:
            return _png(out["png"], headers)
        return JSONResponse({"width": out["width"], "height": out["height"], "seed": spec.seed,
                             "style_id": out["style_id"], "bucket_width": out["bucket_width"],
                             "batch_size": out["batch_size"], "missing_glyphs": missing,
                             "png_base64": base64.b64encode(out["png"]).decode()}, headers=headers)

    @app.post("/v1/jobs")
    async def submit_job(self, request: Request) -> JSONResponse:
        spec = await self._parse(request)
        checked, _ = await call_with_failover(self._worker, "check", spec, timeout_s=30)
        if "api_error" in checked:  # validated fully before anything is queued, as quill serve does
            raise ApiError.from_dict(checked["api_error"])
        job, _ = await call_with_failover(self._jobs, "submit", spec, checked, timeout_s=30, what="job store")
        if "api_error" in job:
            raise ApiError.from_dict(job["api_error"])
        return JSONResponse(job, status_code=202, headers={"Location": job["status_url"]})

    @app.get("/v1/jobs/{job_id}")
    async def get_job(self, job_id: str, request: Request):
        return await self._job_call("get", job_id, request)

    @app.delete("/v1/jobs/{job_id}")
    async def cancel_job(self, job_id: str, request: Request):
        out = await self._job_call("cancel", job_id, request)
        if "api_error" in out:
            raise ApiError.from_dict(out["api_error"])
        return out

    @app.get("/v1/jobs/{job_id}/result")
    async def job_result(self, job_id: str, request: Request) -> Response:
        view, png, error = await self._job_call("result", job_id, request)
        if view["state"] == "done":
            return _png(png)
        if error is None:
            raise ApiError(409, "not_ready", f"the job is {view['state']}; wait for its 'done' event", "id")
        raise ApiError.from_dict(error)

    @app.get("/v1/jobs/{job_id}/events")
    async def job_events(self, job_id: str, request: Request) -> StreamingResponse:
        """Server-sent events: the job's state now, then every change (queued -> step 0..N ->
        done / failed / cancelled), a keep-alive comment after 10 s without one."""
        first = await self._job_call("events", job_id, request, -1, 0.0)

        async def stream():
            events, after = first, -1
            while events is not None:  # None: the job expired, or the job store restarted
                if not events:
                    yield ": keep-alive\n\n"
                for version, kind, data in events:
                    yield _sse(version, kind, data)
                    if kind in FINAL_STATES:
                        return
                    after = version
                try:
                    events, _ = await call_with_failover(self._jobs, "events", job_id, after, SSE_KEEP_ALIVE_S,
                                                         timeout_s=SSE_KEEP_ALIVE_S + 30, what="job store")
                except ApiError:
                    return

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


# ---- the application ----

# Args of `app_builder` (config.yaml `args:` or `serve run quill_serve_app:app_builder key=value`).
DEFAULT_ARGS: dict[str, Any] = {
    "model_dir": None,             # None: the model packaged with quill
    "device": "auto",              # auto | cpu | gpu
    "threads": 0,                  # 0: the CPUs reserved for the replica (worker_num_cpus)
    "worker_num_cpus": 1.0,        # CPUs each worker replica reserves: "one per node" = the node's CPUs
    "worker_num_gpus": 0.0,
    "worker_resources": {},        # custom resources, e.g. {"quill_worker": 1} to pin replicas to labelled nodes
    "worker_replicas": "auto",     # "auto" (autoscaling) or a fixed count
    "min_replicas": 1,
    "max_replicas": 4,
    "target_ongoing_requests": 0.0,  # per replica; 0: max_batch (one full batch in flight, none waiting)
    "upscale_delay_s": 5.0,
    "downscale_delay_s": 120.0,
    "max_batch": 8,                # lines per forward (serve.batch max_batch_size and the plan's batch)
    "batch_wait_timeout_s": 0.05,  # how long a line waits for company
    "ragged_band_px": 0,           # 0: one queue per width bucket; N: buckets within N px share (ragged)
    "warmup": "none",              # none | all | [widths]: plans built before the replica is ready
    "max_queued_requests": 64,     # lines waiting in each caller's router; more get 429
    "ingress_replicas": 1,
    "job_keep_s": 600.0,
    "max_jobs_kept": 1000,
    "max_pending_jobs": 256,
    "limits": {},                  # Limits fields (max_text_chars, max_steps, timeout_s, ...)
    "api_key_env": "QUILL_API_KEY",
}


def _coerce(name: str, value: Any) -> Any:
    """`serve run ... key=value` passes strings; YAML and Python pass typed values."""
    default = DEFAULT_ARGS[name]
    if not isinstance(value, str) or isinstance(default, str) or default is None:
        return value
    if isinstance(default, (dict, list)):
        return json.loads(value)
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes")
    return type(default)(value)


def resolve_args(args: Optional[dict]) -> dict:
    unknown = set(args or {}) - set(DEFAULT_ARGS)
    if unknown:
        raise ValueError(f"unknown quill_serve_app args: {sorted(unknown)} (known: {sorted(DEFAULT_ARGS)})")
    a = dict(DEFAULT_ARGS)
    a.update({k: _coerce(k, v) for k, v in (args or {}).items()})
    if isinstance(a["warmup"], str) and a["warmup"] not in ("none", "all"):
        a["warmup"] = [int(w) for w in a["warmup"].split(",")]
    return a


def app_builder(args: Optional[dict] = None) -> serve.Application:
    a = resolve_args(args)
    max_batch = int(a["max_batch"])
    worker_opts: dict[str, Any] = {
        "ray_actor_options": {"num_cpus": float(a["worker_num_cpus"]), "num_gpus": float(a["worker_num_gpus"]),
                              "resources": dict(a["worker_resources"])},
        # One batch running and the next one filling: more waits in the caller's router, where
        # Serve counts it as queued for autoscaling and bounds it with max_queued_requests.
        "max_ongoing_requests": 2 * max_batch,
        "max_queued_requests": int(a["max_queued_requests"]),
    }
    if str(a["worker_replicas"]) == "auto":
        worker_opts["autoscaling_config"] = {
            "min_replicas": int(a["min_replicas"]), "max_replicas": int(a["max_replicas"]),
            "target_ongoing_requests": float(a["target_ongoing_requests"] or max_batch),
            "upscale_delay_s": float(a["upscale_delay_s"]), "downscale_delay_s": float(a["downscale_delay_s"])}
    else:
        worker_opts["num_replicas"] = int(a["worker_replicas"])
    worker = LineStudioWorker.options(**worker_opts).bind(
        model_dir=a["model_dir"], device=a["device"], threads=int(a["threads"]), max_batch=max_batch,
        batch_wait_timeout_s=float(a["batch_wait_timeout_s"]), ragged_band_px=int(a["ragged_band_px"]),
        warmup=a["warmup"], max_style_pixels=Limits.from_dict(a["limits"]).max_style_pixels)
    jobs = JobStore.bind(worker, keep_s=float(a["job_keep_s"]), max_kept=int(a["max_jobs_kept"]),
                         max_pending=int(a["max_pending_jobs"]))
    return QuillIngress.options(num_replicas=int(a["ingress_replicas"])).bind(
        worker, jobs, limits=a["limits"], api_key_env=a["api_key_env"])
