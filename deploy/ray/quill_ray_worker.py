"""LineStudioWorker: a Serve deployment holding one warm `quill.LineStudio` per replica.

Lines are batched with Serve's own `@serve.batch`, one batch queue per width bucket: `serve.batch`
keeps one queue per decorated function (it has no per-key queues; its only split is by
multiplexed model id, after a mixed batch has been formed), so the replica decorates one small
handler per bucket on first use. A model loop runs the batches one `studio.generate_rows(...,
plan_batch=max_batch)` call at a time, merging batches of one bucket that waited behind a busy
model; the plan of `max_batch` rows of a width is built once and reused by every later batch.

A job's line is streamed (`generate_stream`): its batch's start and every sampler step reach the
job store as they happen. A batch whose every row has been given up (client gone, job cancelled)
stops at its next step.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Optional

import ray
from ray import serve

from quill_ray_request import ApiError, LineSpec, decode_style_image

logger = logging.getLogger("ray.serve")


@dataclass
class _Row:
    text: str
    embedding: Any          # quill.StyleEmbedding or None (no style)
    seed: int
    settings: tuple         # LineSpec.settings(): rows of one generate_rows call share them
    bucket_width: int
    style_id: str
    events: Optional[asyncio.Queue] = None  # a streamed row's step events, then its result
    abandoned: bool = False                 # its caller went away: its batch need not finish for it


@serve.deployment(
    name="LineStudioWorker",
    # The app builder sets replicas / autoscaling, num_cpus and the queue limits from its args.
    health_check_period_s=5,
    health_check_timeout_s=30,
    graceful_shutdown_wait_loop_s=1,
    graceful_shutdown_timeout_s=60,
)
class LineStudioWorker:
    def __init__(self, model_dir: Optional[str] = None, device: str = "auto", threads: int = 0,
                 max_batch: int = 8, batch_wait_timeout_s: float = 0.05, ragged_band_px: int = 0,
                 warmup: Any = "none", max_style_pixels: int = 4096 * 4096, style_cache: int = 64,
                 stuck_batch_s: float = 600.0):
        import quill  # here, so the ingress and job store processes never load the native module

        self._quill = quill
        if threads <= 0:  # the CPUs Ray reserved for this replica, not every core of the node
            threads = max(1, int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)))
        started = time.monotonic()
        self._studio = quill.LineStudio(model_dir, device=device, threads=threads)
        self._max_batch = int(max_batch)
        self._max_ongoing = serve.get_replica_context()._deployment_config.max_ongoing_requests
        self._batch_wait_timeout_s = float(batch_wait_timeout_s)
        self._ragged_band_px = int(ragged_band_px)
        self._max_style_pixels = int(max_style_pixels)
        self._stuck_batch_s = float(stuck_batch_s)
        # One thread runs the model (batches take turns in arrival order); one prepares requests
        # (text width, style embedding), so the event loop and health checks never block on C++.
        self._gen = ThreadPoolExecutor(1, thread_name_prefix="quill-generate")
        self._prep = ThreadPoolExecutor(1, thread_name_prefix="quill-prepare")
        self._queues: dict[int, Any] = {}
        self._styles: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._style_cache = int(style_cache)
        self._busy_since: Optional[float] = None
        self._pending: list[tuple[_Row, asyncio.Future]] = []  # handed over by Serve, not yet running
        self._work = asyncio.Event()
        self._model_task: Optional[asyncio.Task] = None
        self._default_style = None
        if self._studio.has_style_encoder:
            try:
                self._default_style = self._studio.embed_style("default")
            except (ValueError, quill.QuillError) as e:  # a model without a reference hand
                logger.info("no default style: %s", e)
        widths = self._warmup_widths(warmup)
        if widths:
            self._studio.warm_up(widths, self._max_batch)
        self._replica = serve.get_replica_context().replica_id.unique_id
        logger.info("LineStudioWorker %s ready in %.1f s: model %s, device %s, %d threads, %d plans warmed",
                    self._replica, time.monotonic() - started, self._studio.model_dir, self._studio.device,
                    threads, len(widths))

    def _warmup_widths(self, warmup: Any) -> list[int]:
        if warmup in (None, "none", "", []):
            return []
        all_widths = list(self._studio.bucket_widths())
        if warmup == "all":
            widths = all_widths
        else:
            widths = [int(w) for w in (warmup.split(",") if isinstance(warmup, str) else warmup)]
        return sorted({self._queue_key(w) for w in widths})

    def _queue_key(self, bucket_width: int) -> int:
        """The batch queue of a width: its bucket, or with ragged bands the band's widest width."""
        band = self._ragged_band_px
        return bucket_width if band <= 0 else min(-(-bucket_width // band) * band, self._studio.max_line_width)

    # ---- calls from the ingress and the job store (each returns data, errors included) ----

    async def generate(self, spec: LineSpec) -> dict:
        """One line: {"png", "width", "height", "batch_size", "missing_glyphs", ...} or
        {"api_error": ApiError.to_dict()}."""
        try:
            row = await asyncio.get_running_loop().run_in_executor(self._prep, self._prepare, spec)
        except Exception as e:  # noqa: BLE001 - every request gets an answer
            return {"api_error": self._error_of(e).to_dict()}
        return await self._line(row)

    async def generate_stream(self, spec: LineSpec) -> AsyncIterator[dict]:
        """generate() with progress, for `handle.options(stream=True)`: {"step", "steps",
        "batch_size"} when the line's batch starts (step 0) and after every sampler step, then the
        result generate() would return."""
        try:
            row = await asyncio.get_running_loop().run_in_executor(self._prep, self._prepare, spec)
        except Exception as e:  # noqa: BLE001
            yield {"api_error": self._error_of(e).to_dict()}
            return
        row.events = asyncio.Queue()  # at most steps + 2 items

        async def finish():
            try:
                result = await self._line(row)
            except Exception as e:  # noqa: BLE001
                result = {"api_error": self._error_of(e).to_dict()}
            row.events.put_nowait(result)

        task = asyncio.create_task(finish())
        try:
            while True:
                item = await row.events.get()
                yield item
                if "step" not in item:
                    return
        finally:  # also when the caller cancels the stream
            row.abandoned = True
            task.cancel()

    async def _line(self, row: _Row) -> dict:
        try:
            return await self._batch_queue(self._queue_key(row.bucket_width))(row)
        except asyncio.CancelledError:
            row.abandoned = True
            raise

    async def check(self, spec: LineSpec) -> dict:
        """Everything generate checks before queueing: {"bucket_width", "style_id", "steps"} or {"api_error"}."""
        try:
            row = await asyncio.get_running_loop().run_in_executor(self._prep, self._prepare, spec)
        except Exception as e:  # noqa: BLE001
            return {"api_error": self._error_of(e).to_dict()}
        return {"bucket_width": row.bucket_width, "style_id": row.style_id,
                "steps": spec.steps or int(self._studio.defaults["steps"])}

    def info(self) -> dict:
        s = self._studio
        return {"model": s.model_dir, "device": s.device, "line_height": s.line_height,
                "max_line_width": s.max_line_width, "max_batch": self._max_batch, "defaults": dict(s.defaults),
                "replica": self._replica}

    def check_health(self):
        """Serve replaces a replica whose check fails: here, one whose model call has hung."""
        busy = self._busy_since
        if busy is not None and time.monotonic() - busy > self._stuck_batch_s:
            raise RuntimeError(f"a batch has been running for {time.monotonic() - busy:.0f} s")

    # ---- preparation (prep thread) ----

    def _prepare(self, spec: LineSpec) -> _Row:
        style_id = spec.style_id
        if style_id == "inline":
            embedding = self._embed_inline(spec.style_bytes or b"")
        elif style_id == "default" and self._default_style is not None:
            embedding = self._default_style
        elif style_id == "default" and spec.style_id_given:
            raise ApiError(404, "unknown_style", "this model has no default style (use 'none' or send one)",
                           "style_id")
        else:
            style_id, embedding = "none", None
        try:
            bucket = int(self._studio.bucket_width(spec.text, spec.clamp_overflow))
        except ValueError as e:
            raise ApiError(422, "invalid_text", str(e), "text") from None
        return _Row(spec.text, embedding, spec.seed, spec.settings(), bucket, style_id)

    def _embed_inline(self, data: bytes):
        if not self._studio.has_style_encoder:
            raise ApiError(422, "no_style_encoder", "this model has no style encoder; style images cannot be used",
                           "style")
        key = hashlib.sha256(data).hexdigest()
        if key in self._styles:
            self._styles.move_to_end(key)
            return self._styles[key]
        pixels = decode_style_image(data, self._max_style_pixels, "style")
        try:
            embedding = self._studio.embed_style(pixels)
        except ValueError as e:  # quill.InvalidFileError is a ValueError too
            code = "invalid_image" if isinstance(e, getattr(self._quill, "InvalidFileError", ())) else "invalid_value"
            raise ApiError(422, code, str(e), "style") from None
        self._styles[key] = embedding
        while len(self._styles) > self._style_cache:
            self._styles.popitem(last=False)
        return embedding

    # ---- batching ----

    def _batch_queue(self, key: int):
        queue = self._queues.get(key)
        if queue is None:  # at most one per bucket: len(studio.bucket_widths()) queues
            async def run_batch(rows: list[_Row]) -> list[dict]:
                return await self._run_batch(rows)

            run_batch.__name__ = f"lines_w{key}"  # Serve's batch metrics are tagged with this name
            # Every formed batch is handed over at once (max_concurrent_batches: more than can ever
            # be in the replica), so batches that queue behind a busy model can be merged.
            queue = serve.batch(max_batch_size=self._max_batch, batch_wait_timeout_s=self._batch_wait_timeout_s,
                                max_concurrent_batches=self._max_ongoing)(run_batch)
            self._queues[key] = queue
        return queue

    async def _run_batch(self, rows: list[_Row]) -> list[dict]:
        """A batch from Serve -> the model loop. Serve forms a batch within batch_wait_timeout_s of
        its first line whether or not the model is free (batching.py forms the next batch while
        the previous one waits for its semaphore), so under load it hands over many small batches
        of one bucket; the model loop merges those that queued while the model was busy."""
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in rows]
        self._pending.extend(zip(rows, futures))
        if self._model_task is None or self._model_task.done():
            self._model_task = asyncio.create_task(self._model_loop())
        self._work.set()
        return list(await asyncio.gather(*futures))

    async def _model_loop(self) -> None:
        """Runs one generate_rows at a time: the oldest waiting line and up to max_batch - 1 more of
        its width bucket and settings, in arrival order (as quill serve's scheduler does)."""
        loop = asyncio.get_running_loop()
        while True:
            if not self._pending:
                self._work.clear()
                await self._work.wait()
                continue
            first = self._pending[0][0]
            key = (self._queue_key(first.bucket_width), first.settings)
            take, keep = [], []
            for entry in self._pending:
                fits = len(take) < self._max_batch and (self._queue_key(entry[0].bucket_width), entry[0].settings) == key
                (take if fits else keep).append(entry)
            self._pending = keep
            for row, fut in take:
                if row.abandoned and not fut.done():  # answered without running: nobody waits for it
                    fut.set_result({"api_error": ApiError(409, "cancelled", "the caller went away").to_dict()})
            take = [(row, fut) for row, fut in take if not fut.done()]
            if not take:
                continue
            rows = [row for row, _ in take]
            on_step = self._step_callback(rows, loop)
            on_step(0, first.settings[0] or int(self._studio.defaults["steps"]))  # the batch starts
            try:
                images = await loop.run_in_executor(self._gen, self._generate, rows, first.settings, on_step)
                results = [{"png": png, "width": width, "height": height, "batch_size": len(take),
                            "bucket_width": row.bucket_width, "seed": row.seed, "style_id": row.style_id,
                            "missing_glyphs": missing, "replica": self._replica}
                           for row, (png, height, width, missing) in zip(rows, images)]
            except Exception as e:  # noqa: BLE001 - every row gets an answer
                results = [{"api_error": self._error_of(e).to_dict()}] * len(take)
            for (_, fut), result in zip(take, results):
                if not fut.done():
                    fut.set_result(result)

    @staticmethod
    def _step_callback(rows: list[_Row], loop: asyncio.AbstractEventLoop) -> Callable[[int, int], bool]:
        """generate_rows' progress(step, steps). It runs on the model thread between steps, so it
        only hands the step to the event loop (never waiting for it), and stops the batch (returns
        False) once none of its rows is wanted, as quill serve's scheduler does."""
        streamed = [r.events for r in rows if r.events is not None]

        def publish(step: int, steps: int) -> None:
            for events in streamed:
                events.put_nowait({"step": step, "steps": steps, "batch_size": len(rows)})

        def on_step(step: int, steps: int) -> bool:
            if streamed:
                try:
                    loop.call_soon_threadsafe(publish, step, steps)
                except RuntimeError:  # the loop has closed: the replica is stopping
                    pass
            return not all(r.abandoned for r in rows)

        return on_step

    def _generate(self, rows: list[_Row], settings: tuple,
                  on_step: Callable[[int, int], bool]) -> list[tuple[bytes, int, int, list[int]]]:
        steps, cfg, shift, start_sigma, clamp_overflow = settings
        self._busy_since = time.monotonic()
        try:
            lines = self._studio.generate_rows(
                [(r.text, r.embedding, r.seed) for r in rows], steps=steps, cfg=cfg, shift=shift,
                start_sigma=start_sigma, clamp_overflow=clamp_overflow, plan_batch=self._max_batch,
                ragged=self._ragged_band_px > 0, progress=on_step, with_missing=True)
            return [(self._quill.encode_png(img), int(img.shape[0]), int(img.shape[1]), missing)
                    for img, missing in lines]
        finally:
            self._busy_since = None

    def _error_of(self, e: Exception) -> ApiError:
        if isinstance(e, ApiError):
            return e
        if isinstance(e, ValueError):
            return ApiError(422, "invalid_value", str(e), "text")
        if isinstance(e, self._quill.Cancelled):
            return ApiError(409, "cancelled", str(e))
        logger.error("generation failed", exc_info=e)
        return ApiError(500, "generation_failed", f"{type(e).__name__}: {e}"[:500])

    def __del__(self):
        for pool in (getattr(self, "_gen", None), getattr(self, "_prep", None)):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
