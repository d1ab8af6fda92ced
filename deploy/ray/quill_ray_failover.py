"""Calls from one deployment to another that survive the loss of the replica running them.

A replica that dies under a call (its process killed, its node lost) fails the call with
RayActorError; the router then drops that replica, and the call runs once more on another one (a
line is deterministic from its seed). Every other outcome is an ApiError: nothing waits forever
and nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Optional

from ray.exceptions import RayActorError, RayTaskError
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from ray.serve.handle import DeploymentHandle

from quill_ray_request import ApiError

logger = logging.getLogger("ray.serve")


async def _with_failover(start: Callable[[], Any], consume: Callable[[Any, int], Awaitable[Any]], *,
                         timeout_s: float, what: str, method: str) -> tuple[Any, int]:
    """start() -> a response (unary or streaming); consume(response, attempt) -> its result.
    -> (result, attempts)."""
    deadline = time.monotonic() + timeout_s
    lost: Optional[BaseException] = None
    for attempt in (1, 2):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        response = start()
        try:
            return await asyncio.wait_for(consume(response, attempt), remaining), attempt
        except asyncio.CancelledError:  # our caller went away (client disconnect, job cancelled)
            response.cancel()
            raise
        except asyncio.TimeoutError:
            response.cancel()
            raise ApiError(504, "deadline_exceeded", f"the line was not done by its deadline ({timeout_s:g} s)") from None
        except BackPressureError as e:
            raise ApiError(429, "queue_full", f"the {what} queue is full ({e}); retry after the time given",
                           headers={"Retry-After": "1"}) from None
        except DeploymentUnavailableError as e:
            raise ApiError(503, "unavailable", e.message, headers={"Retry-After": "5"}) from None
        except RayActorError as e:  # ActorDiedError, ActorUnavailableError
            lost = e
            logger.warning("%s.%s: replica lost on attempt %d: %s", what, method, attempt, str(e).splitlines()[0])
        except RayTaskError as e:  # the deployment's code raised (a bug: errors are returned as values)
            cause = getattr(e, "cause", None) or e
            raise ApiError(500, "internal", f"the {what} failed: {type(cause).__name__}: {cause}"[:500]) from None
    if lost is None:
        raise ApiError(504, "deadline_exceeded", f"the line was not done by its deadline ({timeout_s:g} s)")
    raise ApiError(503, "replica_failed",
                   f"the {what} replica running this request failed, and so did the retry: "
                   f"{type(lost).__name__}: {str(lost).splitlines()[0]}"[:500],
                   headers={"Retry-After": "5"})


async def call_with_failover(handle: DeploymentHandle, method: str, *args: Any, timeout_s: float,
                             what: str = "worker") -> tuple[Any, int]:
    """One call to a deployment -> (result, attempts)."""
    async def result(response, attempt):
        return await response

    return await _with_failover(lambda: getattr(handle, method).remote(*args), result,
                                timeout_s=timeout_s, what=what, method=method)


async def stream_with_failover(handle: DeploymentHandle, method: str, *args: Any, timeout_s: float,
                               on_item: Callable[[Any, int], None], what: str = "worker") -> tuple[Any, int]:
    """One call to a generator method -> (its last item, attempts). Every item, the last included,
    goes to on_item(item, attempt) as it arrives; a retry starts the stream over."""
    async def last(response, attempt):
        item = None
        async for item in response:
            on_item(item, attempt)
        return item

    streaming = handle.options(stream=True)
    return await _with_failover(lambda: getattr(streaming, method).remote(*args), last,
                                timeout_s=timeout_s, what=what, method=method)
