"""Fleet-wide circuit breakers on Redis: one breaker per peer, shared by every process.

`RedisCircuitBreaker` keeps a key per peer in Redis that exists while the fleet's breaker is
open; each process keeps its own `CircuitBreaker` for the failures it counts, and opens the
fleet's when its own opens. See the package's docstring (`a2a_client_errors.integrations.redis`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import threading
import weakref
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._breaker import (
    Admission,
    BreakerFallback,
    BreakerState,
    BreakerTransition,
    CircuitBreaker,
    Verdict,
    listen,
)
from a2a_client_errors._errors import safe_peer
from a2a_client_errors._redis_time import (
    await_worker,
    reads_bounded,
    run_bounded,
)
from a2a_client_errors._retry import BudgetState, IdlePeers
from a2a_client_errors.integrations.redis._budget import SYNC_USE, Worker

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable

__all__ = ["BREAKER_SCRIPT", "RedisCircuitBreaker"]

_log = logging.getLogger("a2a_client_errors")


BREAKER_SCRIPT: Final = """
-- One peer's shared breaker: a key that exists while the fleet's breaker is open, and expires
-- (on the server's clock) when the cool-down ends. KEYS[1]: the key. ARGV[1]: 'open', 'close'
-- or 'read'; ARGV[2]: the cool-down in ms (open). Returns the ms left open (0: closed).
local op = ARGV[1]
if op == 'open' then
  local ms = tonumber(ARGV[2])
  if redis.call('PTTL', KEYS[1]) < ms then
    redis.call('SET', KEYS[1], '1', 'PX', ms)
  end
elseif op == 'close' then
  redis.call('DEL', KEYS[1])
  return 0
end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then return 0 end
return left
"""
"""The Lua script of the fleet's breakers (public for tests and other clients)."""


class _Fleet:
    """What this process knows of one peer's shared breaker (changed under the breaker's lock)."""

    __slots__ = ("down", "held", "read_at", "reading", "until")

    def __init__(self) -> None:
        self.until = 0.0  # the fleet's breaker is open until then, by this process's clock
        self.read_at = -math.inf  # when the key was last read
        self.held: float | None = None  # the end of the fleet's opening the local one holds
        self.down = False  # told that its breaker decides locally
        self.reading = False  # a read in the background is under way


class RedisCircuitBreaker:
    """Circuit breakers per peer whose *open* state is shared by every process through Redis.

    Each process counts its own outcomes with a local `CircuitBreaker` (same settings). When
    one process's breaker opens, it writes ``prefix + peer`` to Redis with the cool-down as its
    expiry (on the server's clock); every other process reads that key at most every
    ``sync_interval`` seconds and fails fast while it stands, so one replica's evidence protects
    them all. A process that learns of the opening this way holds its own breaker open until
    the key expires (plus up to ``jitter`` of the cool-down, so the fleet's probes spread): when
    the cool-down ends, each process sends one probe, never its whole traffic at once. A probe
    that succeeds deletes the key: the fleet closes, and a process that reads the key gone
    before its expiry closes its held breaker without a probe of its own.

    When Redis is slow or down, nothing raises, and no call waits for Redis more than
    ``timeout`` of Redis's time (its answers are timed as the module docstring says): for
    ``retry_interval`` seconds the local breaker alone decides, and the Guard's hooks are told
    (`Hook.on_breaker_fallback`, state ``local``, then ``shared`` when Redis answers again),
    as for `RedisRetryBudget`. Sync code never waits for Redis at all: the key is read in the
    background and the last reading decides; ``Guard.acall`` awaits ``aadmit`` when the reading
    is older than ``sync_interval``.

    What this process knows of a peer, its local breaker included, is forgotten once the peer
    has not been asked about for ``idle`` seconds (a setting of the local breakers; see
    `CircuitBreaker`); the fleet's key expires by itself.

    Args:
        client: a redis-py client (``redis.Redis`` or ``redis.asyncio.Redis``).
        prefix: the key prefix, one per fleet.
        sync_interval: the most seconds a reading of the fleet's state is used for.
        timeout: the most seconds Redis may take to answer (its time, not this process's lag).
        retry_interval: seconds Redis is left alone after a failure. When it answers again,
            every peer deciding locally reads the fleet's state at once.
        settings: the local breakers' settings (`CircuitBreaker`'s arguments: ``failure_ratio``,
            ``min_calls``, ``window``, ``cooldown``, ``max_cooldown``, ``jitter``, ``idle``,
            ``clock``, ``random``).

    Example:
        >>> import redis
        >>> from a2a_client_errors import Guard, RedisCircuitBreaker
        >>> guard = Guard(breaker=RedisCircuitBreaker(redis.Redis(socket_timeout=0.05)))

    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "a2a:breaker:",
        sync_interval: float = 0.5,
        timeout: float = 0.05,
        retry_interval: float = 0.5,
        **settings: Any,
    ) -> None:
        register_script = getattr(client, "register_script", None)
        if not callable(register_script):
            msg = "RedisCircuitBreaker needs a redis-py client (redis.Redis or redis.asyncio.Redis)"
            raise TypeError(msg)
        if not (sync_interval > 0 and timeout > 0 and retry_interval >= 0):
            msg = "RedisCircuitBreaker needs sync_interval > 0, timeout > 0, retry_interval >= 0"
            raise ValueError(msg)
        self.local = CircuitBreaker(**settings)
        self.clock = self.local.clock
        self.client = client
        self.prefix = prefix
        self.sync_interval = float(sync_interval)
        self.timeout = float(timeout)
        self.retry_interval = float(retry_interval)
        self.is_async = inspect.iscoroutinefunction(getattr(client, "execute_command", None))
        self._bounded = not self.is_async and reads_bounded(client)
        self._script = register_script(BREAKER_SCRIPT)
        self._worker = Worker()
        weakref.finalize(self, self._worker.stop)
        self._lock = threading.Lock()
        self._fleet: IdlePeers[_Fleet] = IdlePeers(
            lambda _peer: _Fleet(), idle=self.local.idle, clock=self.clock
        )
        self._down_until = -math.inf
        self._lost = False  # Redis failed since it last answered
        self._listeners: list[Callable[[], Callable[[BreakerTransition], object] | None]] = []
        self._fallback_listeners: list[Callable[[], Callable[[BreakerFallback], object] | None]]
        self._fallback_listeners = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._reads: dict[str, asyncio.Task[float | None]] = {}  # reads in flight, per peer
        self.local.subscribe(self._changed)

    # --- what the Guard asks ----------------------------------------------------------------

    def admit(self, peer: str) -> Admission:
        """The local breaker's answer, refused too while the fleet's breaker is open."""
        fleet = self._fleet.get(peer)
        if fleet.held is not None and self._stale(fleet):
            self._read_in_background(peer)  # the fleet may have closed meanwhile
        admission = self.local.admit(peer)
        if not admission.allowed:
            return admission
        now = self.clock()
        until = fleet.until
        if now - fleet.read_at >= self.sync_interval:
            self._read_in_background(peer)
        return self._shared_answer(peer, admission, until, now)

    async def aadmit(self, peer: str) -> Admission:
        """`admit`, awaiting a fresh reading of the fleet's state when the last one is old."""
        fleet = self._fleet.get(peer)
        if fleet.held is not None and self._stale(fleet):
            left = await self._read(peer)
            if left is not None:
                self._seen(peer, left)  # the fleet may have closed meanwhile
        admission = self.local.admit(peer)
        if not admission.allowed:
            return admission
        now = self.clock()
        until = fleet.until
        if now - fleet.read_at >= self.sync_interval:
            left = await self._read(peer)
            if left is not None:
                until = self._seen(peer, left)
            now = self.clock()
        return self._shared_answer(peer, admission, until, now)

    def _stale(self, fleet: _Fleet) -> bool:
        return self.clock() - fleet.read_at >= self.sync_interval

    def record(
        self, peer: str, verdict: Verdict, *, probe: bool = False, retry_after: float | None = None
    ) -> None:
        """Count one attempt's verdict in the local breaker (its changes reach the fleet)."""
        self.local.record(peer, verdict, probe=probe, retry_after=retry_after)

    def state(self, peer: str) -> BreakerState:
        """The local state, or open while the fleet's breaker is open (as last read)."""
        fleet = self._fleet.peek(peer)
        if fleet is not None and fleet.until > self.clock():
            return BreakerState.OPEN
        return self.local.state(peer)

    def peers(self) -> list[str]:
        """The peers this process holds anything of: a local breaker, a reading of the fleet's.

        Each is forgotten once not asked about for ``idle`` seconds.
        """
        return sorted({*self.local.peers(), *self._fleet.peers()})

    def _shared_answer(
        self, peer: str, admission: Admission, until: float, now: float
    ) -> Admission:
        if until <= now:
            return admission
        if admission.probe:  # the fleet is still open: this process's probe does not go
            self.local.record(peer, Verdict.ABANDONED, probe=True)
        return Admission(False, False, BreakerState.OPEN, until - now)

    # --- the fleet's state ------------------------------------------------------------------

    def _seen(self, peer: str, left_ms: float) -> float:
        """Note a reading (ms left open); tell the hooks when the fleet's state changed."""
        now = self.clock()
        until = now + left_ms / 1000.0 if left_ms > 0 else 0.0
        fleet = self._fleet.get(peer)
        with self._lock:
            before = fleet.until
            fleet.until, fleet.read_at = until, now
        local = self.local
        if until > now:
            if local.state(peer) is BreakerState.CLOSED:
                spread = local.jitter * local.cooldown * local.random()
                if local.open_until(peer, until + spread):
                    with self._lock:
                        fleet.held = until
                    self._notify(
                        BreakerTransition(
                            peer, BreakerState.CLOSED, BreakerState.OPEN, "shared", until - now
                        )
                    )
        elif before > now:
            with self._lock:
                held, fleet.held = fleet.held, None
            # Gone before it expired: a probe elsewhere closed the fleet's breaker.
            if held is not None and now < held:
                local.reset(peer, cause="shared")
        return until

    def _changed(self, event: BreakerTransition) -> None:
        """The local breaker changed: the fleet learns of an opening and of a closing."""
        if event.new is BreakerState.OPEN:
            self._send(event.peer, "open", max(1, round(event.retry_in * 1000)))
        elif event.new is BreakerState.CLOSED:
            fleet = self._fleet.get(event.peer)
            with self._lock:
                fleet.until, fleet.read_at, fleet.held = 0.0, self.clock(), None
            if event.cause != "shared":  # the fleet closed it: nothing to tell the fleet
                self._send(event.peer, "close", 0)
        self._notify(event)

    def _send(self, peer: str, op: str, ms: int) -> None:
        if self.is_async:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._failed(peer, SYNC_USE)
                return
            task = loop.create_task(self._asend(peer, op, ms))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if self.clock() < self._down_until:
            return
        future = self._worker.submit(lambda: self._script(keys=[self.prefix + peer], args=[op, ms]))
        future.add_done_callback(lambda done: self._settled(peer, done))

    async def _asend(self, peer: str, op: str, ms: int) -> None:
        await self._aexchange(peer, op, ms)

    def _read_in_background(self, peer: str) -> None:
        fleet = self._fleet.get(peer)
        with self._lock:
            if fleet.reading:
                return
            fleet.reading = True
        if self.is_async or self.clock() < self._down_until:
            with self._lock:
                fleet.reading = False
                fleet.read_at = self.clock()
            if self.is_async:
                self._failed(peer, SYNC_USE)
            return
        future = self._worker.submit(
            lambda: self._script(keys=[self.prefix + peer], args=["read", 0])
        )
        future.add_done_callback(lambda done: self._settled(peer, done, reading=True))

    def _settled(
        self, peer: str, done: concurrent.futures.Future[Any], *, reading: bool = False
    ) -> None:
        if reading:
            fleet = self._fleet.get(peer)
            with self._lock:
                fleet.reading = False
        if done.cancelled() or done.exception() is not None:
            exc = done.exception() if not done.cancelled() else None
            self._failed(peer, "CancelledError" if exc is None else type(exc).__name__)
            return
        self._answered(peer)
        self._seen(peer, float(done.result()))

    async def _aexchange(self, peer: str, op: str, ms: int) -> float | None:
        """One exchange, never waiting more than ``timeout``: the ms left open, or None."""
        if self.clock() < self._down_until:
            return None
        key = self.prefix + peer
        try:
            if self.is_async:
                raw = await run_bounded(
                    lambda: self._script(keys=[key], args=[op, ms]), self.timeout
                )
            else:
                future = self._worker.submit(lambda: self._script(keys=[key], args=[op, ms]))
                if not await await_worker(future, self.timeout, bounded=self._bounded):
                    future.cancel()
                    raise TimeoutError  # told as every other failure below
                raw = future.result()
        except Exception as exc:  # any failure of Redis or of the client: decide locally
            self._failed(peer, type(exc).__name__)
            return None
        self._answered(peer)
        if op != "read":
            return None
        return float(raw)

    def _failed(self, peer: str, cause: str) -> None:
        fleet = self._fleet.get(peer)
        with self._lock:
            self._down_until = self.clock() + self.retry_interval
            self._lost = True
            if fleet.down:
                return
            fleet.down = True
        self._fallback(BreakerFallback(peer, BudgetState.LOCAL, cause))

    def _answered(self, peer: str) -> None:
        """Redis answered for ``peer``: shared again; so is every other peer, read at once."""
        fleet = self._fleet.get(peer)
        with self._lock:
            lost, self._lost = self._lost, False
            was_down, fleet.down = fleet.down, False
        if was_down:
            self._fallback(BreakerFallback(peer, BudgetState.SHARED, None))
        if not lost:
            return  # not the first answer since Redis failed: the others are read already
        for other in self._fleet.peers():
            known = self._fleet.peek(other)
            if other != peer and known is not None and known.down:
                self._rejoin(other)

    def _rejoin(self, peer: str) -> None:
        """Read ``peer``'s key in the background: its breaker is shared again when it lands."""
        if not self.is_async:
            self._read_in_background(peer)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._aread(peer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _aread(self, peer: str) -> None:
        left = await self._read(peer)
        if left is not None:
            self._seen(peer, left)

    def _read_done(self, peer: str, done: asyncio.Task[float | None]) -> None:
        if self._reads.get(peer) is done:
            del self._reads[peer]

    async def _read(self, peer: str) -> float | None:
        """Read ``peer``'s key: one read in flight per peer, shared by every admit that waits.

        A thousand callers at once make one exchange, not a thousand (which would exhaust
        the client's pool and be taken for a broken Redis). A caller cancelled while it
        waits leaves the read to the others.
        """
        loop = asyncio.get_running_loop()
        pending = self._reads.get(peer)
        if pending is None or pending.done() or pending.get_loop() is not loop:
            pending = loop.create_task(self._aexchange(peer, "read", 0))
            self._reads[peer] = pending
            pending.add_done_callback(lambda done: self._read_done(peer, done))
        return await asyncio.shield(pending)

    # --- telling ----------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[BreakerTransition], object]) -> None:
        """Tell ``listener`` each change of a peer's state (held as `CircuitBreaker` holds it)."""
        listen(self._listeners, listener)

    def subscribe_fallback(self, listener: Callable[[BreakerFallback], object]) -> None:
        """Tell ``listener`` when a peer's breaker decides locally (Redis down), or shared."""
        listen(self._fallback_listeners, listener)

    def _notify(self, event: BreakerTransition) -> None:
        for ref in list(self._listeners):
            listener = ref()
            if listener is None:
                continue
            try:
                listener(event)
            except Exception:
                _log.exception("a2a_client_errors: a circuit breaker listener failed")

    def _fallback(self, event: BreakerFallback) -> None:
        if event.state is BudgetState.LOCAL:
            _log.warning(
                "a2a_client_errors: the circuit breaker of %s decides locally (%s)",
                safe_peer(event.peer),
                event.cause,
            )
        else:
            _log.info(
                "a2a_client_errors: the circuit breaker of %s is shared again",
                safe_peer(event.peer),
            )
        for ref in list(self._fallback_listeners):
            listener = ref()
            if listener is None:
                continue
            try:
                listener(event)
            except Exception:
                _log.exception("a2a_client_errors: a breaker fallback listener failed")

    async def aclose(self) -> None:
        """Wait for what is being sent, then end the worker thread (the client is yours)."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        self._worker.stop()

    def close(self) -> None:
        """End the worker thread once what was submitted is sent (the client is yours)."""
        self._worker.stop()
