"""How long Redis took to answer: Redis's time, not the time this process took to read it.

A busy process reads an answer late: an event loop running a thousand callers, or blocked by
a slow callback; a hundred threads taking turns at the interpreter. Timing Redis by when its
answer is read takes a healthy Redis for a broken one exactly when the load is highest, and
sends every decision to the local fallback. So a command is timed by what Redis did:

- A sync client's commands run on a worker thread, and the client's own socket timeout
  bounds each of them: the operating system measures it while the interpreter may be busy
  elsewhere. Whoever waits for such a command waits for that verdict (`wait`), however long
  the worker takes to get its turn at the interpreter (up to `STUCK`).
- An asyncio command has ``timeout`` seconds of the loop's attention. A wait that the loop
  ended more than half a ``timeout`` late (it was blocked or busy: its own lag) does not
  count, and one that ends on time gives the loop `PASSES` more passes to deliver an answer
  that came meanwhile (redis-py needs three from the socket to the caller) (`await_answer`).
  A window counts only once the command has begun (it may wait in this process's own queue).
- Otherwise (a sync client with no socket timeout, an asyncio client), nobody waits more
  than `patience` in all: a process too busy to read an answer for that long decides
  without it.

Shared by the fleet's retry budget and circuit breaker and by the deduplication store.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import time
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "PASSES",
    "STUCK",
    "await_answer",
    "await_worker",
    "patience",
    "reads_bounded",
    "run_bounded",
    "wait",
    "wait_worker",
]

T = TypeVar("T")

PASSES: Final = 8
"""Loop passes given, once a window ends on time, to an answer that already came."""

STUCK: Final = 60.0
"""Seconds after which a worker thread whose client bounds its reads is taken as stuck."""


def patience(timeout: float) -> float:
    """The most seconds anyone waits for one command, however busy the process: 1 s at least."""
    return max(1.0, 20.0 * timeout)


def _begun() -> bool:
    return True


def _on_time(opened: float, window: float, now: float) -> bool:
    """Whether a window of ``window`` seconds opened at ``opened`` ended on time at ``now``.

    More than half a window late, the loop or the thread was busy: the window is its lag.
    """
    return now - opened - window <= window / 2


def reads_bounded(client: object) -> bool:
    """Whether a redis-py client bounds its own reads (a finite socket timeout is set)."""
    pool = getattr(client, "connection_pool", None)
    settings = getattr(pool, "connection_kwargs", None)
    if not isinstance(settings, dict):
        return False
    value = settings.get("socket_timeout")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def wait(
    done: concurrent.futures.Future[Any],
    timeout: float,
    *,
    bounded: bool,
    begun: Callable[[], bool] = _begun,
) -> bool:
    """Wait in a thread for ``done``: True when it is done (with a result or an exception).

    ``bounded``: the command's client bounds its reads itself, so its verdict is waited for
    (at most `STUCK` seconds). Otherwise ``timeout`` counts from when ``begun`` says the command
    started, by windows a late wake-up (this process's own lag) does not use up.
    """
    if bounded:
        concurrent.futures.wait((done,), STUCK)
        return done.done()
    clock = time.monotonic
    give_up = clock() + patience(timeout)
    while not done.done():
        opened = clock()
        if opened >= give_up:
            break
        window = min(timeout, give_up - opened)
        counted = begun()
        concurrent.futures.wait((done,), window)
        if done.done():
            return True
        if counted and _on_time(opened, window, clock()):
            return False
    return done.done()


async def await_answer(
    done: asyncio.Future[Any],
    timeout: float,
    *,
    bounded: bool = False,
    begun: Callable[[], bool] = _begun,
) -> bool:
    """`wait`, on the event loop (never blocking it): True when ``done`` is done.

    ``done`` is never cancelled here. ``bounded``: it stands for a worker thread's command
    whose client bounds its reads (waited for, at most `STUCK` seconds).
    """
    if bounded:
        await asyncio.wait((done,), timeout=STUCK)
        return done.done()
    clock = asyncio.get_running_loop().time
    give_up = clock() + patience(timeout)
    while not done.done():
        opened = clock()
        if opened >= give_up:
            break
        window = min(timeout, give_up - opened)
        counted = begun()
        await asyncio.wait((done,), timeout=window)
        if done.done():
            return True
        if counted and _on_time(opened, window, clock()):
            for _ in range(PASSES):
                await asyncio.sleep(0)
                if done.done():
                    return True
            return False
    return done.done()


def _started(future: concurrent.futures.Future[Any]) -> Callable[[], bool]:
    """Whether a worker thread has started ``future``'s command (it may wait behind others)."""
    return lambda: future.running() or future.done()


def wait_worker(future: concurrent.futures.Future[Any], timeout: float, *, bounded: bool) -> bool:
    """`wait` for a worker thread's command, timed from when the worker starts it."""
    return wait(future, timeout, bounded=bounded, begun=_started(future))


async def await_worker(
    future: concurrent.futures.Future[Any], timeout: float, *, bounded: bool
) -> bool:
    """`wait_worker` from async code: the event loop is never blocked.

    The result stays on ``future`` (read it there); the loop's copy of it is read here, so a
    failure that comes after the wait ends is not logged as never retrieved.
    """
    landed = asyncio.wrap_future(future)
    landed.add_done_callback(_read)
    return await await_answer(landed, timeout, bounded=bounded, begun=_started(future))


def _read(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def run_bounded(call: Callable[[], Awaitable[T]], timeout: float) -> T:
    """Run one asyncio command timed by `await_answer`; `TimeoutError` (it is cancelled) if late.

    ``call`` makes the command's awaitable when the command begins.
    """
    started = False

    async def command() -> T:
        nonlocal started
        started = True
        return await call()

    task = asyncio.ensure_future(command())
    try:
        answered = await await_answer(task, timeout, begun=lambda: started)
    except BaseException:
        task.cancel()
        raise
    if not answered:
        task.cancel()
        msg = "Redis did not answer in time"
        raise TimeoutError(msg)
    return task.result()
