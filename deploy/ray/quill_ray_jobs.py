"""JobStore: the async jobs of POST /v1/jobs (quill serve's src/serve/job.cpp and its routes).

One replica owns every job, so any ingress replica can answer GET / DELETE / events for any job,
and a job survives the loss of the ingress replica that accepted it and of the worker that ran it
(it is retried once). If this replica itself dies, Serve restarts it empty: its jobs answer 404,
as quill serve's do after a restart.

A job runs as one streamed worker call (LineStudioWorker.generate_stream), whose step events
become the job's `step` / `steps` and its SSE events. Each change is kept in the job's event log
until FOLLOW_GRACE_S after the job ended, so a follower of GET /v1/jobs/{id}/events sees every
step, however fast; then only the last event is kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

from ray import serve
from ray.serve.handle import DeploymentHandle

from quill_ray_failover import stream_with_failover
from quill_ray_request import ApiError, LineSpec, missing_glyphs_json

logger = logging.getLogger("ray.serve")
FINAL_STATES = ("done", "failed", "cancelled")
FOLLOW_GRACE_S = 60.0


@dataclass
class JobRecord:
    """One async job as GET /v1/jobs/{id} shows it (quill serve's job_json)."""
    id: str
    spec: LineSpec
    bucket_width: int
    style_id: str
    steps: int = 0
    state: str = "queued"              # queued, running, done, failed, cancelled
    step: int = 0
    batch_size: int = 0
    width: int = 0
    height: int = 0
    missing_glyphs: list = field(default_factory=list)  # code points
    error: Optional[dict] = None       # ApiError.to_dict() of a failed or cancelled job
    png: Optional[bytes] = field(default=None, repr=False)
    finished_at: float = 0.0
    version: int = 0
    events: list = field(default_factory=list, repr=False)  # (version, SSE event type, data)
    changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def final(self) -> bool:
        return self.state in FINAL_STATES

    def view(self) -> dict:
        j = {"id": self.id, "state": self.state, "queue_position": 1 if self.state == "queued" else 0,
             "step": self.step, "steps": self.steps, "batch_size": self.batch_size,
             "seed": self.spec.seed, "style_id": self.style_id, "bucket_width": self.bucket_width,
             "status_url": f"/v1/jobs/{self.id}", "events_url": f"/v1/jobs/{self.id}/events",
             "result_url": f"/v1/jobs/{self.id}/result",
             "error": None if self.error is None else {"code": self.error["code"], "message": self.error["message"]}}
        if self.state == "done":
            j.update(width=self.width, height=self.height, missing_glyphs=missing_glyphs_json(self.missing_glyphs))
        return j

    def sse_event(self) -> tuple[str, dict]:
        """(event type, data) of the job's state now, the fields quill serve's sse_event sends."""
        data = {"id": self.id, "state": self.state}
        if self.state == "queued":
            data["queue_position"] = 1
        elif self.state == "running":
            data.update(step=self.step, steps=self.steps, batch_size=self.batch_size)
        elif self.state == "done":
            data.update(width=self.width, height=self.height, result_url=f"/v1/jobs/{self.id}/result",
                        missing_glyphs=missing_glyphs_json(self.missing_glyphs))
        else:
            data["error"] = {"code": self.error["code"], "message": self.error["message"]}
        return ("step" if self.state == "running" else self.state), data

    def on_worker_item(self, item: dict) -> None:
        """An item of the worker's stream: a step event (step 0: the line's batch started) or the result."""
        if "step" in item and not self.final():
            self.state, self.step, self.steps = "running", item["step"], item["steps"]
            self.batch_size = item["batch_size"]
            self.publish()

    def publish(self) -> None:
        """Records the job's new state as an event and wakes its followers."""
        self.version += 1
        self.events.append((self.version, *self.sse_event()))
        self.changed.set()
        self.changed = asyncio.Event()


@serve.deployment(name="JobStore", num_replicas=1, max_ongoing_requests=1000, ray_actor_options={"num_cpus": 0})
class JobStore:
    """Job records and the tasks that run them (see the module docstring)."""

    def __init__(self, worker: DeploymentHandle, keep_s: float = 600.0, max_kept: int = 1000,
                 max_pending: int = 256):
        self._worker = worker
        self._keep_s, self._max_kept, self._max_pending = float(keep_s), int(max_kept), int(max_pending)
        self._jobs: dict[str, JobRecord] = {}
        self._tasks: dict[str, asyncio.Task] = {}

    def _expire(self) -> None:
        now = time.monotonic()
        ended = sorted((j.finished_at, j.id) for j in self._jobs.values() if j.final())
        over = max(0, len(ended) - self._max_kept)
        for i, (finished, job_id) in enumerate(ended):
            if i < over or now - finished > self._keep_s:
                del self._jobs[job_id]
            elif now - finished > FOLLOW_GRACE_S:
                job = self._jobs[job_id]
                job.events = job.events[-1:]

    async def submit(self, spec: LineSpec, checked: dict) -> dict:
        self._expire()
        if len(self._tasks) >= self._max_pending:
            return {"api_error": ApiError(429, "queue_full", f"the job queue is full ({self._max_pending} jobs); retry "
                                      "after the time given", headers={"Retry-After": "1"}).to_dict()}
        job = JobRecord(uuid.uuid4().hex, spec, checked["bucket_width"], checked["style_id"], checked["steps"])
        job.publish()
        self._jobs[job.id] = job
        self._tasks[job.id] = asyncio.create_task(self._run(job))
        return job.view()

    async def _run(self, job: JobRecord) -> None:
        try:
            out, _ = await stream_with_failover(self._worker, "generate_stream", job.spec, timeout_s=job.spec.timeout_s,
                                                on_item=lambda item, _: job.on_worker_item(item))
            if out is None:
                raise ApiError(500, "internal", "the worker's stream ended without a result")
            if "api_error" in out:
                raise ApiError.from_dict(out["api_error"])
            job.png, job.width, job.height = out["png"], out["width"], out["height"]
            job.batch_size, job.missing_glyphs = out["batch_size"], out["missing_glyphs"]
            job.state, job.step = "done", job.steps
        except ApiError as e:
            job.state, job.error = "failed", e.to_dict()
        except asyncio.CancelledError:
            job.state = "cancelled"
            job.error = job.error or ApiError(409, "cancelled", "cancelled by the client").to_dict()
        except Exception as e:  # noqa: BLE001 - a job always ends in a final state
            logger.exception("job %s failed", job.id)
            job.state, job.error = "failed", ApiError(500, "internal", f"{type(e).__name__}: {e}"[:500]).to_dict()
        finally:
            job.finished_at = time.monotonic()
            job.publish()
            self._tasks.pop(job.id, None)

    def get(self, job_id: str) -> Optional[dict]:
        job = self._jobs.get(job_id)
        return None if job is None else job.view()

    def result(self, job_id: str) -> Optional[tuple[dict, Optional[bytes], Optional[dict]]]:
        job = self._jobs.get(job_id)
        return None if job is None else (job.view(), job.png, job.error)

    async def events(self, job_id: str, after: int, wait_s: float) -> Optional[list[tuple[int, str, dict]]]:
        """The job's events newer than version `after` (after < 0: its state now, as the first
        event of a stream), waiting up to wait_s for one; [] when none came. None: no such job."""
        job = self._jobs.get(job_id)
        if job is None:
            return None
        if after < 0:
            return [(job.version, *job.sse_event())]
        if job.version <= after and not job.final():
            try:
                await asyncio.wait_for(job.changed.wait(), wait_s)
            except asyncio.TimeoutError:
                return []
        return [e for e in job.events if e[0] > after]

    async def cancel(self, job_id: str) -> Optional[dict]:
        job = self._jobs.get(job_id)
        if job is None:
            return None
        if job.final():
            return {"api_error": ApiError(409, "already_ended", f"the job has already ended ({job.state})", "id").to_dict()}
        job.error = ApiError(409, "cancelled", "cancelled by the client").to_dict()
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()  # cancels the worker stream; a batch left with no wanted row stops at its next step
            await asyncio.gather(task, return_exceptions=True)
        return job.view()
