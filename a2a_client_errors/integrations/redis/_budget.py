"""Fleet-wide retry budgets on Redis: one token bucket per peer, shared by every process.

A `RetryBudget` protects a peer from one process. An orchestrator that runs as a hundred
replicas gives the peer a hundred budgets: a hundred bursts of retries, a retry storm again.
`RedisRetryBudget` keeps one bucket per peer in Redis, shared by the whole fleet::

    import redis
    from a2a_client_errors import Guard
    from a2a_client_errors.integrations.redis import RedisRetryBudget

    budget = RedisRetryBudget(redis.Redis(host="redis", socket_timeout=0.05), capacity=50)
    guard = Guard(budget=budget)  # in every replica: 50 retries per peer for the fleet

The bucket
    A hash per peer (``prefix + peer``: ``tokens``, ``ts``), changed only by one Lua script,
    so every change is atomic. The script reads the server's clock (``TIME``): replicas with
    skewed clocks refill it alike. It refills ``refill_per_second`` with time and
    ``success_credit`` per success, both capped at ``capacity``, and grants tokens only in
    whole retries. A key expires after ``idle_ttl`` seconds without use (the peer starts again
    with a full bucket, as a restarted process would).

The local lease (why the hot path does not wait for Redis)
    A process takes up to ``lease`` retries' worth of tokens at once and spends them locally;
    successes are credited locally and sent in batches (``credit_batch`` tokens, or after
    ``sync_interval`` seconds), and while the fleet bucket was full at the last exchange,
    credits are not sent at all (a full bucket drops them). A success costs a clock read and a
    comparison; a retry costs a round trip only when the lease is spent. The price: tokens
    leased by one process wait there, unused by the others, for up to ``sync_interval``
    (then they go back); credits reach the fleet up to ``sync_interval`` late; the tokens
    reported to hooks are as of the last exchange. Leases never add retries: every token
    spent was taken from the fleet bucket first, so the fleet retries at most ``capacity``
    plus what time and successes refilled, whatever the number of processes.

Many retries at once
    Each peer has at most one exchange in flight for spends in a process. A spend that finds
    the lease spent joins the exchange in flight, if any; else it sends one that asks for a
    token for every spend waiting then (at least a lease's worth). When it lands, the oldest
    spends waiting take the tokens granted, and the rest goes to the lease; a spend it did not
    serve asks again (the next exchange serves it first), at most three times. So a burst of
    retries costs a few scripts, not one each, and never drains the client's connection pool.
    A spend cancelled while it waits leaves the exchange to the others, and its token to the
    lease; ``refund`` returns the token of a retry paid for and never sent.

When Redis is slow or down
    No call ever raises for Redis. Redis has ``timeout`` seconds to answer a command, timed by what
    Redis did, not by when this process got around to reading the answer (a healthy Redis is
    never taken for a broken one because the process is busy): a sync client's commands run in
    one worker thread, timed by the client's socket timeout, which the operating system
    measures; an asyncio client's commands have ``timeout`` seconds of the event loop's
    attention, its own lag left out. A call waits longer than ``timeout`` only while this
    process is too busy to read an answer: for a sync client with a socket timeout, until the
    worker thread gets its turn (taken as stuck after a minute); otherwise never more than
    ``max(1, 20 * timeout)`` seconds (a sync client without one is timed by the caller).
    A command that fails or times out trips a breaker: for ``retry_interval`` seconds nothing is
    sent, and the peer's budget decides locally. With ``fail_open=True`` (the default) a local
    `RetryBudget` of ``fallback_capacity`` tokens per peer and process decides (the fleet
    retries at most ``processes * fallback_capacity`` meanwhile); with ``fail_open=False`` every
    retry is refused (first attempts still go). The Guard's hooks are told both ways
    (`Hook.on_budget_fallback`), and a warning is logged. After the breaker's interval the next
    exchange probes Redis; when it answers, the fleet bucket decides again, for every peer at
    once: each peer deciding locally sends what it holds and reads the fleet bucket in the
    background, so its view is the fleet's. Every failure errs toward fewer retries: credits
    that may not have arrived are dropped, and tokens a lost answer granted stay spent.

Sync and async
    A sync client (``redis.Redis``) serves `Guard.call` and `GuardTransport`: a retry whose lease is
    spent waits for the worker thread (for Redis's ``timeout``, as above). ``Guard.acall`` and
    `AsyncGuardTransport` await ``atry_spend``, so they never block the event loop, with either
    client. An asyncio client (``redis.asyncio.Redis``) serves async code only: from sync code
    (no running event loop) its budget decides locally and says so.

redis-py is never imported by this module, only used through the client given (and
imported by `RedisRetryBudget.from_url`): importing ``a2a_client_errors`` never needs it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import math
import os
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._breaker import (
    listen,
)
from a2a_client_errors._errors import safe_peer
from a2a_client_errors._redis_time import (
    await_answer,
    await_worker,
    patience,
    reads_bounded,
    run_bounded,
    wait,
    wait_worker,
)
from a2a_client_errors._retry import BudgetFallback, BudgetState, IdlePeers, RetryBudget

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["SCRIPT", "SYNC_USE", "RedisPeerBudget", "RedisRetryBudget", "Worker"]

_log = logging.getLogger("a2a_client_errors")

SCRIPT: Final = """
-- One peer's retry budget: a token bucket in a hash {tokens, ts}, refilled by the server's
-- clock. KEYS[1]: the bucket. ARGV: capacity, refill per second, credit, want, need, idle ms.
-- Adds the refill since the last change and the credit (capped at capacity), then grants
-- `want` tokens, or as many whole `need`s as there are (none when there is less than `need`).
-- Returns {granted, tokens left} as strings (Lua numbers would be cut to integers).
if redis.replicate_commands then pcall(redis.replicate_commands) end
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local credit = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local need = tonumber(ARGV[5])
local idle = tonumber(ARGV[6])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local saved = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(saved[1])
local ts = tonumber(saved[2])
if tokens == nil or ts == nil then
  tokens = capacity
elseif now > ts then
  tokens = tokens + (now - ts) / 1000000 * rate
end
tokens = math.min(capacity, math.max(0, tokens) + credit)
local granted = 0
if want > 0 and tokens + 1e-9 >= need then
  granted = math.min(want, math.floor(tokens / need + 1e-9) * need)
  tokens = math.max(0, tokens - granted)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
  'ts', string.format('%.0f', now))
redis.call('PEXPIRE', KEYS[1], idle)
return {string.format('%.17g', granted), string.format('%.17g', tokens)}
"""
"""The Lua script that updates one peer's bucket (public for tests and other clients)."""

_EPSILON: Final = 1e-9
_ROUNDS: Final = 3
"""The most exchanges one spend waits for (each asks for every spend then waiting)."""
SYNC_USE: Final = "AsyncClientInSyncCode"
"""The cause told when an asyncio client's budget is used where it cannot be awaited."""


@dataclass(frozen=True, slots=True)
class _Op:
    """One exchange with the fleet bucket: send ``credit`` tokens, take up to ``want``."""

    credit: float
    want: float


_Reply = tuple[float, float]  # (tokens granted, tokens left in the fleet bucket)


class _Flight:
    """One peer's exchange in flight for spends: every spend that needs tokens meanwhile joins it.

    Its ``op`` asks for a token per spend waiting (at least a lease's worth). ``seats`` holds
    the tickets of the spends that wait for it (a ticket is a spend's place in line, kept
    from one exchange to the next); when it lands, the oldest of them, as many as the grant
    covers, are ``paid``: a token is reserved for each, and the rest of the grant goes to the
    lease. A spend that an exchange did not serve is older than any that came after, so the
    next exchange, which asks for every spend waiting, serves it. It lands once: with the
    reply, however late this process reads it, or with why there is none (a failure, or no
    answer in Redis's time, as `a2a_client_errors._redis_time` tells it; ``started`` once
    its command has left this process's own queue).
    """

    __slots__ = ("cause", "done", "job", "landed", "op", "paid", "reply", "seats", "started")

    def __init__(self, op: _Op) -> None:
        self.op = op
        self.started = False
        self.done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.job: concurrent.futures.Future[Any] | asyncio.Task[Any] | None = None
        self.landed = False
        self.reply: _Reply | None = None
        self.cause: str | None = None
        self.seats: set[int] = set()
        self.paid: set[int] = set()


class Worker:
    """One daemon thread that runs a sync client's commands: callers wait as long as they choose.

    Made again in a forked child (threads do not survive a fork).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] | None = None
        self._pid = 0
        self._queued: set[concurrent.futures.Future[Any]] = set()

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run ``fn`` on the worker thread; its future."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self._queue is None or self._pid != os.getpid():
                self._queue, self._pid = queue.SimpleQueue(), os.getpid()
                threading.Thread(
                    target=self._run, args=(self._queue,), name="a2a-budget-redis", daemon=True
                ).start()
            self._queued.add(future)
            self._queue.put((fn, future))
        return future

    def cancel_queued(self) -> None:
        """Cancel every command not started yet (they would wait behind a stuck one)."""
        with self._lock:
            queued, self._queued = self._queued, set()
        for future in queued:
            future.cancel()

    def stop(self) -> None:
        """End the thread once it has run what was submitted before."""
        with self._lock:
            if self._queue is not None and self._pid == os.getpid():
                self._queue.put(None)
            self._queue = None

    def _run(self, jobs: queue.SimpleQueue[Any]) -> None:
        while (job := jobs.get()) is not None:
            fn, future = job
            with self._lock:
                self._queued.discard(future)
            if not future.set_running_or_notify_cancel():
                continue  # its caller stopped waiting before it started
            try:
                result = fn()
            except Exception as exc:  # handed to the caller, who decides locally
                future.set_exception(exc)
            else:
                future.set_result(result)


def _reply(raw: object) -> _Reply:
    """The script's answer as numbers (bytes or str, as the client decodes)."""
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        msg = "unexpected reply from the budget script"
        raise TypeError(msg)
    granted, left = float(raw[0]), float(raw[1])
    if not (math.isfinite(granted) and math.isfinite(left)):
        msg = "unexpected reply from the budget script"
        raise ValueError(msg)
    return max(0.0, granted), max(0.0, left)


class RedisRetryBudget:
    """One retry budget per peer, shared by every process through Redis (a `BudgetRegistryLike`).

    Give it to every replica's Guard (``Guard(budget=RedisRetryBudget(client))``): each peer's
    budget is one token bucket in Redis, under ``prefix + peer``. The module docstring tells
    how the bucket, the lease and the fallback work; the README has the figures.

    Args:
        client: a redis-py client, ``redis.Redis`` or ``redis.asyncio.Redis`` (or a cluster
            client). Give a sync client a socket timeout of ``timeout``: it is what times its
            commands. Give an asyncio client long ones, or none: the budget times its
            commands. `from_url` makes either so.
        prefix: the key prefix, one per fleet that shares budgets (deployments with different
            settings need different prefixes).
        capacity: the most tokens a peer's fleet bucket holds, and its starting fill.
        retry_cost: tokens one retry takes.
        success_credit: tokens a successful call gives back.
        refill_per_second: tokens the server's clock gives back per second (0: successes only).
        lease: retries' worth of tokens a process takes per exchange (1: one per retry).
        credit_batch: credited tokens kept locally before they are sent (default: one lease's
            worth; 0: every success is sent, in the background).
        sync_interval: seconds after which pending credits are sent, unused leases go back, a
            refused process asks the fleet bucket again, and a full bucket is read again.
        idle_ttl: seconds after which a peer's key expires when nobody uses it (and this
            process forgets the peer, its lease and credits sent back).
        timeout: the most seconds Redis may take to answer before a call decides locally
            (Redis's time: not this process's own lag; see "When Redis is slow or down").
        retry_interval: seconds Redis is left alone after a failure, before it is probed.
            When it answers again, every peer deciding locally is reconciled at once.
        fail_open: while Redis cannot be reached, a local bucket grants retries (True), or
            every retry is refused (False).
        fallback_capacity: the local bucket's capacity, per peer and process (default: one
            lease's worth of tokens).
        clock: a monotonic clock in seconds for the intervals above (the fleet bucket itself
            runs on the Redis server's clock).

    Example:
        >>> import redis
        >>> from a2a_client_errors import Guard, RedisRetryBudget
        >>> budget = RedisRetryBudget(redis.Redis(socket_timeout=0.05), capacity=50)
        >>> guard = Guard(budget=budget)

    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "a2a:retry-budget:",
        capacity: float = 10.0,
        retry_cost: float = 1.0,
        success_credit: float = 0.5,
        refill_per_second: float = 0.0,
        lease: int = 2,
        credit_batch: float | None = None,
        sync_interval: float = 1.0,
        idle_ttl: float = 600.0,
        timeout: float = 0.05,
        retry_interval: float = 0.5,
        fail_open: bool = True,
        fallback_capacity: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        lowest = {
            "capacity": (capacity, 0.0),
            "retry_cost": (retry_cost, _EPSILON),
            "success_credit": (success_credit, 0.0),
            "refill_per_second": (refill_per_second, 0.0),
            "lease": (lease, 1),
            "credit_batch": (0.0 if credit_batch is None else credit_batch, 0.0),
            "sync_interval": (sync_interval, _EPSILON),
            "idle_ttl": (idle_ttl, 0.001),
            "timeout": (timeout, _EPSILON),
            "retry_interval": (retry_interval, 0.0),
            "fallback_capacity": (0.0 if fallback_capacity is None else fallback_capacity, 0.0),
        }
        wrong = [
            f"{name} >= {least:g}"
            for name, (value, least) in lowest.items()
            if not (math.isfinite(value) and value >= least)
        ]
        if wrong or int(lease) != lease:
            wanted = ", ".join(wrong or ["lease a whole number"])
            msg = f"RedisRetryBudget needs finite settings, with {wanted}"
            raise ValueError(msg)
        register_script = getattr(client, "register_script", None)
        if not callable(register_script):
            msg = "RedisRetryBudget needs a redis-py client (redis.Redis or redis.asyncio.Redis)"
            raise TypeError(msg)
        self.client = client
        self.prefix = prefix
        self.capacity = float(capacity)
        self.retry_cost = float(retry_cost)
        self.success_credit = float(success_credit)
        self.refill_per_second = float(refill_per_second)
        self.lease = lease
        self.credit_batch = lease * self.retry_cost if credit_batch is None else credit_batch
        self.sync_interval = float(sync_interval)
        self.idle_ttl = float(idle_ttl)
        self.timeout = float(timeout)
        self.retry_interval = float(retry_interval)
        self.fail_open = fail_open
        self.fallback_capacity = (
            lease * self.retry_cost if fallback_capacity is None else float(fallback_capacity)
        )
        self.clock = clock or time.monotonic
        self.is_async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))
        self._script = register_script(SCRIPT)
        self._worker = Worker()
        weakref.finalize(self, self._worker.stop)  # a budget dropped unclosed ends its thread
        self._lock = threading.Lock()
        self._peers: IdlePeers[RedisPeerBudget] = IdlePeers(
            lambda peer: RedisPeerBudget(self, peer),
            idle=self.idle_ttl,
            clock=self.clock,
            forget=self._forget,
        )
        self._listeners: list[Callable[[], Callable[[BudgetFallback], object] | None]] = []
        self._down_until = -math.inf
        self._cause: str | None = None
        self._stalled = False
        self._lost = False  # Redis failed since it last answered
        self._bounded = not self.is_async and reads_bounded(client)
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        async_client: bool = False,
        timeout: float = 0.05,
        **options: Any,
    ) -> RedisRetryBudget:
        """A budget on a new client for ``url`` (``redis://host:6379/0``), set up for budgets.

        A sync client's socket timeouts are ``timeout`` (they time Redis); an asyncio
        client's are ``max(1, 20 * timeout)`` (they would time the event loop: the budget
        times its commands). It does not retry by itself (redis-py retries ten times by
        default: a budget would rather decide locally at once).

        Args:
            url: the Redis URL.
            async_client: make a ``redis.asyncio.Redis`` (for ``Guard.acall``) instead of a
                ``redis.Redis``.
            timeout: the budget's ``timeout``.
            options: the other settings of `RedisRetryBudget`.

        """
        try:
            import redis  # noqa: PLC0415 (the extra is imported when used, never before)
            import redis.asyncio  # noqa: PLC0415
            import redis.asyncio.retry  # noqa: PLC0415
            from redis.backoff import NoBackoff  # noqa: PLC0415
            from redis.retry import Retry  # noqa: PLC0415
        except ImportError as exc:  # the extra is not installed
            raise ImportError(
                "RedisRetryBudget.from_url needs redis: pip install 'a2a-client-errors[redis]'",
                name=exc.name,
            ) from exc
        # A sync client's socket timeouts time Redis (the OS measures them); an asyncio
        # client's would time the event loop, so the budget times its commands instead.
        bound = patience(timeout) if async_client else timeout
        settings: dict[str, Any] = {"socket_timeout": bound, "socket_connect_timeout": bound}
        client: Any
        if async_client:
            client = redis.asyncio.Redis.from_url(
                url, retry=redis.asyncio.retry.Retry(NoBackoff(), 0), **settings
            )
        else:
            client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **settings)
        return cls(client, timeout=timeout, **options)

    # --- the registry -----------------------------------------------------------------------

    def get(self, peer: str) -> RedisPeerBudget:
        """The budget of ``peer`` in this process (its bucket is ``prefix + peer`` in Redis).

        A peer unused for ``idle_ttl`` seconds is forgotten by this process (its lease and
        credits sent back first), as its key is by Redis.
        """
        return self._peers.get(peer)

    def peers(self) -> list[str]:
        """The peers that have a budget in this process now."""
        return self._peers.peers()

    def _forget(self, budget: RedisPeerBudget) -> None:
        """An idle peer is dropped: what it holds goes back to the fleet, in the background."""
        op = budget._handover()
        if op is not None:
            self._background(budget, op)

    def subscribe(self, listener: Callable[[BudgetFallback], object]) -> None:
        """Tell ``listener`` each time a peer's budget falls back to local, or recovers.

        A bound method is held weakly (a Guard subscribes its hooks, and may go away before
        the budget); any other callable, strongly. A listener that raises is logged.
        """
        with self._lock:
            listen(self._listeners, listener)  # once: a hook several Guards share

    def _notify(self, event: BudgetFallback) -> None:
        if event.state is BudgetState.LOCAL:
            _log.warning(
                "a2a_client_errors: the retry budget of %s decides locally (%s; %s)",
                safe_peer(event.peer),
                event.cause,
                "fail open" if event.fail_open else "fail closed: no retries",
            )
        else:
            _log.info(
                "a2a_client_errors: the retry budget of %s is shared again", safe_peer(event.peer)
            )
        with self._lock:
            refs = list(self._listeners)
        for ref in refs:
            listener = ref()
            if listener is None:
                with self._lock:
                    if ref in self._listeners:
                        self._listeners.remove(ref)
                continue
            try:
                listener(event)
            except Exception:
                _log.exception("a2a_client_errors: a budget fallback listener failed")

    # --- talking to Redis -------------------------------------------------------------------

    def _args(self, op: _Op) -> list[str]:
        return [
            repr(self.capacity),
            repr(self.refill_per_second),
            repr(op.credit),
            repr(op.want),
            repr(self.retry_cost),
            str(max(1, round(self.idle_ttl * 1000))),
        ]

    def _available(self, now: float) -> str | None:
        """None when Redis may be asked now; else why not (the breaker's cause)."""
        if now < self._down_until:
            return self._cause or "Unavailable"
        return None

    def _trip(self, cause: str) -> None:
        """Leave Redis alone for ``retry_interval`` seconds."""
        with self._lock:
            self._cause = cause
            self._down_until = self.clock() + self.retry_interval
            self._lost = True

    def _heard(self) -> None:
        """Redis answered: after an outage, every peer deciding locally is reconciled now.

        Each sends what it holds and reads the fleet bucket, in the background, so its
        decisions and its view are the fleet's again without waiting for its next retry.
        """
        with self._lock:
            if not self._lost:
                return
            self._lost = False
        for budget in self._peers.values():
            op = budget._rejoin_op()
            if op is not None:
                self._background(budget, op)

    def _run(self, key: str, op: _Op) -> tuple[_Reply | None, str | None]:
        """Run ``op`` on a sync client, waiting at most ``timeout``: the reply, or why none."""
        if self.is_async:
            return None, SYNC_USE
        if self._stalled:
            return None, "TimeoutError"  # the worker is still stuck on an earlier command
        args = self._args(op)
        future = self._worker.submit(lambda: self._script(keys=[key], args=args))
        if not wait_worker(future, self.timeout, bounded=self._bounded):
            self._stall(future)
            return None, "TimeoutError"
        return _outcome(future)

    async def _arun(self, key: str, op: _Op) -> tuple[_Reply | None, str | None]:
        """Run ``op`` without blocking the event loop, for at most ``timeout`` seconds."""
        args = self._args(op)
        if not self.is_async:
            if self._stalled:
                return None, "TimeoutError"
            future = self._worker.submit(lambda: self._script(keys=[key], args=args))
            if not await await_worker(future, self.timeout, bounded=self._bounded):
                self._stall(future)
                return None, "TimeoutError"
            return _outcome(future)
        try:
            raw = await run_bounded(lambda: self._script(keys=[key], args=args), self.timeout)
            return _reply(raw), None
        except Exception as exc:  # any failure of Redis or of the client: decide locally
            return None, type(exc).__name__

    def _stall(self, future: concurrent.futures.Future[Any]) -> None:
        """A command outlived its caller's wait: send nothing more until it ends.

        The commands queued behind it are cancelled: they would wait as long.
        """
        if future.cancel():
            return  # it had not started: the worker will skip it
        self._stalled = True
        future.add_done_callback(self._unstall)
        self._worker.cancel_queued()

    def _unstall(self, _: concurrent.futures.Future[Any]) -> None:
        self._stalled = False

    def _background(self, budget: RedisPeerBudget, op: _Op) -> None:
        """Send ``op`` without waiting for it; ``budget`` settles the reply."""
        if self.is_async:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                budget._settle(op, None, SYNC_USE)
                return
            task = loop.create_task(self._abackground(budget, op))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if self._stalled:
            budget._settle(op, None, "TimeoutError")
            return
        args = self._args(op)
        future = self._worker.submit(lambda: self._script(keys=[budget.key], args=args))
        future.add_done_callback(lambda done: budget._settle(op, *_outcome(done)))

    async def _abackground(self, budget: RedisPeerBudget, op: _Op) -> None:
        budget._settle(op, *await self._arun(budget.key, op))

    # --- spends' exchanges: one in flight per peer, shared by every spend that waits --------

    def _send(self, budget: RedisPeerBudget, flight: _Flight) -> None:
        """Start ``flight``'s exchange; it lands by itself when Redis answers (or fails)."""
        args = self._args(flight.op)
        if self.is_async:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                budget._land(flight, None, SYNC_USE)
                return
            # The exchange times itself, once, however many spends wait for it.
            task = loop.create_task(
                run_bounded(lambda: self._script(keys=[budget.key], args=args), self.timeout)
            )
            flight.job = task
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(lambda done: budget._land(flight, *_task_outcome(done)))
            return
        if self._stalled:
            budget._land(flight, None, "TimeoutError")  # the worker is stuck on an earlier command
            return
        script = self._script

        def run() -> Any:
            flight.started = True  # Redis's time starts now
            return script(keys=[budget.key], args=args)

        job = self._worker.submit(run)
        flight.job = job
        job.add_done_callback(lambda done: budget._land(flight, *_outcome(done)))

    def _expire(self, budget: RedisPeerBudget, flight: _Flight) -> None:
        """``flight`` outlived ``timeout``: it lands as timed out, its command is let go."""
        job = flight.job
        if isinstance(job, concurrent.futures.Future):
            self._stall(job)
        elif job is not None:
            job.cancel()
        budget._land(flight, None, "TimeoutError")

    def _wait(self, budget: RedisPeerBudget, flight: _Flight) -> None:
        """Wait until ``flight`` lands, or Redis did not answer in its own time."""
        if not wait(flight.done, self.timeout, bounded=self._bounded, begun=lambda: flight.started):
            self._expire(budget, flight)

    async def _await(self, budget: RedisPeerBudget, flight: _Flight) -> None:
        """`_wait`, never blocking the event loop."""
        landed = asyncio.wrap_future(flight.done)
        if self.is_async:  # its exchange times itself: this is only against a stuck loop
            await asyncio.wait((landed,), timeout=patience(self.timeout))
            if not landed.done():
                self._expire(budget, flight)
            return
        if not await await_answer(
            landed,
            self.timeout,
            bounded=self._bounded,
            begun=lambda: flight.started,
        ):
            self._expire(budget, flight)

    # --- shutting down ----------------------------------------------------------------------

    def flush(self) -> bool:
        """Send every pending credit and give back every unused lease, now (sync clients).

        Waits for what is in flight first, at most ``timeout`` per exchange. True when all of
        it reached Redis. Call it before a process exits, or let `close` do it.
        """
        if self.is_async:
            return False
        try:
            self._worker.submit(lambda: None).result(self.timeout)  # what was queued is done
        except Exception:  # a stuck worker: what is pending is sent if it frees in time
            _log.debug("a2a_client_errors: the budget worker is busy", exc_info=True)
        ok = True
        for budget in self._peers.values():
            op = budget._handover()
            if op is not None:
                reply, cause = self._run(budget.key, op)
                budget._settle(op, reply, cause)
                ok = ok and reply is not None
        return ok

    async def aflush(self) -> bool:
        """`flush`, from async code (either client); never blocks the event loop."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if not self.is_async:
            drained = asyncio.wrap_future(self._worker.submit(lambda: None))
            with contextlib.suppress(asyncio.TimeoutError, concurrent.futures.TimeoutError):
                await asyncio.wait_for(drained, self.timeout)
        ok = True
        for budget in self._peers.values():
            op = budget._handover()
            if op is not None:
                reply, cause = await self._arun(budget.key, op)
                budget._settle(op, reply, cause)
                ok = ok and reply is not None
        return ok

    def close(self) -> None:
        """`flush`, then end the worker thread (the client is yours to close)."""
        self.flush()
        self._worker.stop()

    async def aclose(self) -> None:
        """`aflush`, then end the worker thread, if any (the client is yours to close)."""
        await self.aflush()
        self._worker.stop()

    def __repr__(self) -> str:
        return (
            f"RedisRetryBudget(prefix={self.prefix!r}, capacity={self.capacity:g},"
            f" lease={self.lease}, fail_open={self.fail_open})"
        )


def _task_outcome(task: asyncio.Task[Any]) -> tuple[_Reply | None, str | None]:
    """A finished asyncio command's reply, or why there is none."""
    if task.cancelled():
        return None, "TimeoutError"  # cancelled only when its time was up
    exc = task.exception()
    if exc is not None:
        return None, type(exc).__name__
    try:
        return _reply(task.result()), None
    except Exception as error:
        return None, type(error).__name__


def _outcome(future: concurrent.futures.Future[Any]) -> tuple[_Reply | None, str | None]:
    """A finished command's reply, or why there is none."""
    if future.cancelled():  # its wait was up, or it was queued behind a stuck command
        return None, "TimeoutError"
    exc = future.exception()
    if exc is not None:
        return None, type(exc).__name__
    try:
        return _reply(future.result()), None
    except Exception as error:
        return None, type(error).__name__


class RedisPeerBudget:
    """One peer's share of the fleet bucket, as this process holds it (a `RetryBudgetLike`).

    Made by `RedisRetryBudget.get`. Thread-safe; its methods never raise and never wait for
    Redis longer than the budget's ``timeout``.

    Attributes:
        peer: the peer's key.
        key: its bucket's key in Redis.

    """

    __slots__ = (
        "_empty_until",
        "_fallback",
        "_flight",
        "_flushing",
        "_full_until",
        "_lease",
        "_lease_at",
        "_level",
        "_lock",
        "_pending",
        "_pending_at",
        "_state",
        "_store",
        "_tickets",
        "_waiting",
        "key",
        "peer",
    )

    def __init__(self, store: RedisRetryBudget, peer: str) -> None:
        self._store = store
        self.peer = peer
        self.key = store.prefix + peer
        self._lock = threading.Lock()
        self._state = BudgetState.SHARED
        self._lease = 0.0  # tokens taken from the fleet bucket, not spent yet
        self._lease_at = 0.0
        self._pending = 0.0  # credits (and leases given back) not sent yet
        self._pending_at: float | None = None
        self._level: float | None = None  # the fleet bucket at the last exchange
        self._full_until = -math.inf  # credits are dropped until then: the bucket was full
        self._empty_until = -math.inf  # retries are refused until then: the bucket was empty
        self._flushing = False
        self._fallback: RetryBudget | None = None
        self._flight: _Flight | None = None  # the spends' exchange in flight, if any
        self._waiting = 0  # spends waiting for the fleet bucket now
        self._tickets = 0  # the last place in line given to a spend that waits

    # --- RetryBudgetLike --------------------------------------------------------------------

    def try_spend(self) -> bool:
        """Take one retry's cost: from the lease, else the fleet bucket, else the fallback.

        Waits for Redis at most ``timeout`` seconds (only when the lease is spent), sharing
        the exchange in flight for this peer with every other spend that waits; never raises.
        """
        store = self._store
        rounds = 0
        ticket: int | None = None
        flight: _Flight | None = None
        try:
            while True:
                step = self._step(ticket)
                if isinstance(step, bool):
                    return step
                flight, leader, ticket = step
                if leader:
                    store._send(self, flight)
                store._wait(self, flight)
                decided = self._after(flight, ticket)
                flight = None
                if decided is not None:
                    return decided
                rounds += 1
                if rounds >= _ROUNDS:  # others were served first each time: enough waiting
                    return self._late()
        finally:
            self._done(flight, ticket)

    async def atry_spend(self) -> bool:
        """`try_spend` for async code: awaits Redis (never blocking the event loop)."""
        store = self._store
        rounds = 0
        ticket: int | None = None
        flight: _Flight | None = None
        try:
            while True:
                step = self._step(ticket)
                if isinstance(step, bool):
                    return step
                flight, leader, ticket = step
                if leader:
                    store._send(self, flight)
                await store._await(self, flight)
                decided = self._after(flight, ticket)
                flight = None
                if decided is not None:
                    return decided
                rounds += 1
                if rounds >= _ROUNDS:  # others were served first each time: enough waiting
                    return self._late()
        finally:
            self._done(flight, ticket)

    def refund(self) -> None:
        """Give back one retry's cost, for a retry paid for and never sent.

        It goes back where spends are taken from: the lease (sent back to the fleet with it),
        or the local bucket while this peer's budget decides locally.
        """
        store = self._store
        with self._lock:
            if self._state is BudgetState.LOCAL and self._fallback is not None:
                self._fallback.refund()
                return
            if self._lease <= 0:
                self._lease_at = store.clock()
            self._lease += store.retry_cost

    def credit(self) -> None:
        """Record a successful call: credited locally, sent to the fleet in batches."""
        store = self._store
        now = store.clock()
        if now < self._full_until:
            return  # the fleet bucket was full a moment ago: a credit would be dropped there
        with self._lock:
            if self._fallback is not None and self._state is BudgetState.LOCAL:
                self._fallback.credit()
            self._pending = min(store.capacity, self._pending + store.success_credit)
            if self._pending_at is None:
                self._pending_at = now
            self._give_back(now)
            op = self._flush_op(now)
        if op is not None:
            store._background(self, op)

    @property
    def tokens(self) -> float:
        """Tokens left: the lease, plus the fleet bucket as last seen (or the local bucket)."""
        store = self._store
        with self._lock:
            if self._state is BudgetState.LOCAL:
                local = self._fallback.tokens if self._fallback is not None else 0.0
                return self._lease + local
            return self._lease + (store.capacity if self._level is None else self._level)

    @property
    def state(self) -> BudgetState:
        """Where this peer's budget decides now: the fleet bucket, or locally."""
        return self._state

    def subscribe(self, listener: Callable[[BudgetFallback], object]) -> None:
        """`RedisRetryBudget.subscribe` (a Guard given this one budget subscribes here)."""
        self._store.subscribe(listener)

    # --- the state machine ------------------------------------------------------------------

    def _step(self, ticket: int | None) -> bool | tuple[_Flight, bool, int]:
        """A spend's next step: decided (a bool), or the flight to wait for, and whether to send it.

        ``ticket``: the spend's place in line, once it has waited for a flight already.
        """
        store = self._store
        now = store.clock()
        notice = None
        with self._lock:
            if self._lease + _EPSILON >= store.retry_cost:
                self._lease = max(0.0, self._lease - store.retry_cost)
                return True
            cause = store._available(now)
            if cause is not None:  # Redis is left alone for now
                decided: bool | tuple[_Flight, bool, int] = self._spend_locally()
                notice = self._fall_back(cause)
            elif self._state is BudgetState.SHARED and now < self._empty_until:
                return False  # the fleet bucket was empty a moment ago
            else:
                if ticket is None:
                    ticket = self._tickets = self._tickets + 1
                    self._waiting += 1
                flight = self._flight
                leader = flight is None
                if flight is None:
                    # One exchange asks for every spend waiting now; later ones join it.
                    self._give_back(now)
                    want = max(store.lease, self._waiting) * store.retry_cost
                    op = _Op(credit=self._pending, want=want)
                    self._pending, self._pending_at = 0.0, None
                    flight = self._flight = _Flight(op)
                flight.seats.add(ticket)
                decided = (flight, leader, ticket)
        if notice is not None:
            store._notify(notice)
        return decided

    def _after(self, flight: _Flight, ticket: int) -> bool | None:
        """A spend's decision once its flight landed; None when it must ask again."""
        store = self._store
        with self._lock:
            flight.seats.discard(ticket)
            if flight.reply is None:  # Redis failed it: the fallback decides
                return self._spend_locally()
            if ticket in flight.paid:
                flight.paid.discard(ticket)
                return True
            if self._lease + _EPSILON >= store.retry_cost:
                self._lease = max(0.0, self._lease - store.retry_cost)
                return True
            level = flight.reply[1]
            if level + _EPSILON < store.retry_cost:  # the fleet bucket is empty
                self._empty_until = store.clock() + self._recheck(level)
                return False
            return None  # the bucket has more, asked for by others first: ask for it

    def _late(self) -> bool:
        """A spend that waited for `_ROUNDS` exchanges, each served others first: local.

        Alone: nothing trips, nothing is told, the next spends ask Redis as before.
        """
        with self._lock:
            return self._spend_locally()

    def _done(self, flight: _Flight | None, ticket: int | None) -> None:
        """A spend ends: decided, or cancelled while it waited for ``flight``.

        A token reserved for it by a flight that landed goes to the lease.
        """
        if ticket is None:
            return
        store = self._store
        with self._lock:
            self._waiting -= 1
            if flight is None:
                return
            flight.seats.discard(ticket)
            if ticket in flight.paid:
                flight.paid.discard(ticket)
                if self._lease <= 0:
                    self._lease_at = store.clock()
                self._lease += store.retry_cost

    def _land(self, flight: _Flight, reply: _Reply | None, cause: str | None) -> None:
        """Take in ``flight``'s reply (or its failure), once; wake the spends that wait for it."""
        store = self._store
        with self._lock:
            if flight.landed:
                return
            flight.landed = True
            flight.reply, flight.cause = reply, cause
            if self._flight is flight:
                self._flight = None
            notice = self._take_in(reply, cause)
            if reply is not None:
                tokens = int(reply[0] / store.retry_cost + _EPSILON)
                flight.paid = set(sorted(flight.seats)[:tokens])  # the oldest spends first
                self._lease = max(0.0, self._lease - len(flight.paid) * store.retry_cost)
        if notice is not None:  # told before the spends wake: they decide on what it says
            store._notify(notice)
        flight.done.set_result(None)
        if reply is not None:
            store._heard()

    def _flush_op(self, now: float) -> _Op | None:
        """The exchange that sends pending credits, when one is due (under the lock)."""
        store = self._store
        if self._flushing or self._pending <= 0:
            return None
        age = now - (self._pending_at if self._pending_at is not None else now)
        if self._pending < store.credit_batch and age < store.sync_interval:
            return None
        if store._available(now) is not None:
            return None  # kept for when Redis is back (capped at capacity)
        self._flushing = True
        op = _Op(credit=self._pending, want=0.0)
        self._pending, self._pending_at = 0.0, None
        return op

    def _give_back(self, now: float) -> None:
        """An unused lease older than ``sync_interval`` goes back to the fleet (under the lock)."""
        if self._lease > 0 and now - self._lease_at >= self._store.sync_interval:
            self._pending = min(self._store.capacity, self._pending + self._lease)
            self._lease = 0.0
            # As old as the lease: due to be sent now.
            self._pending_at = min(
                now if self._pending_at is None else self._pending_at, self._lease_at
            )

    def _rejoin_op(self) -> _Op | None:
        """The exchange that takes this peer back to the fleet bucket, if it decides locally."""
        with self._lock:
            if self._state is not BudgetState.LOCAL or self._flushing or self._flight is not None:
                return None
            self._flushing = True
            op = _Op(credit=self._pending, want=0.0)
            self._pending, self._pending_at = 0.0, None
            return op

    def _handover(self) -> _Op | None:
        """Everything held locally, to send now (for `RedisRetryBudget.flush`)."""
        with self._lock:
            credit = min(self._store.capacity, self._pending + self._lease)
            if credit <= 0 or self._flushing:
                return None
            self._flushing = True
            self._pending, self._pending_at, self._lease = 0.0, None, 0.0
            return _Op(credit=credit, want=0.0)

    def _spend_locally(self) -> bool:
        """The fallback's decision (under the lock)."""
        if not self._store.fail_open:
            return False
        return self._local().try_spend()

    def _local(self) -> RetryBudget:
        if self._fallback is None:
            store = self._store
            self._fallback = RetryBudget(
                store.fallback_capacity,
                retry_cost=store.retry_cost,
                success_credit=store.success_credit,
                refill_per_second=store.refill_per_second,
                clock=store.clock,
            )
        return self._fallback

    def _fall_back(self, cause: str) -> BudgetFallback | None:
        """Decide locally from now on; the notice to send when that is news (under the lock)."""
        self._full_until = self._empty_until = -math.inf
        if self._state is BudgetState.LOCAL:
            return None
        self._state = BudgetState.LOCAL
        store = self._store
        tokens = self._lease + (self._local().tokens if store.fail_open else 0.0)
        return BudgetFallback(self.peer, BudgetState.LOCAL, cause, store.fail_open, tokens)

    def _settle(self, op: _Op, reply: _Reply | None, cause: str | None) -> None:
        """Take in a credits' exchange's reply (or its failure)."""
        del op  # what it sent is what the reply answers
        store = self._store
        with self._lock:
            self._flushing = False
            notice = self._take_in(reply, cause)
        if notice is not None:
            store._notify(notice)
        if reply is not None:
            store._heard()

    def _take_in(self, reply: _Reply | None, cause: str | None) -> BudgetFallback | None:
        """An exchange's reply (or failure) into the state; the notice to send (under the lock)."""
        store = self._store
        now = store.clock()
        if reply is None:
            # Credits that may not have arrived are dropped, never sent twice.
            if cause != SYNC_USE:
                store._trip(cause or "Unavailable")
            return self._fall_back(cause or "Unavailable")
        notice = None
        granted, level = reply
        self._level = level
        if self._state is BudgetState.LOCAL:
            self._state = BudgetState.SHARED
            notice = BudgetFallback(
                self.peer, BudgetState.SHARED, None, store.fail_open, self._lease + level
            )
        full = level + _EPSILON >= store.capacity
        self._full_until = now + store.sync_interval if full else -math.inf
        if full:  # credits made before a full bucket's answer would be dropped there
            self._pending, self._pending_at = 0.0, None
        if granted > 0:
            if self._lease <= 0:
                self._lease_at = now
            self._lease += granted
        return notice

    def _recheck(self, level: float) -> float:
        """Seconds before a refused process asks the fleet bucket again."""
        store = self._store
        if store.refill_per_second > 0:
            missing = max(0.0, store.retry_cost - level)
            return min(store.sync_interval, missing / store.refill_per_second)
        return store.sync_interval

    def __repr__(self) -> str:
        return (
            f"RedisPeerBudget(peer={self.peer!r}, state={self._state.value},"
            f" tokens={self.tokens:.2f})"
        )
