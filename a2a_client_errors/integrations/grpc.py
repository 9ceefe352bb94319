"""Guard A2A calls made over gRPC: a ``grpc.aio`` client interceptor (extra ``grpc``).

`GuardInterceptor` runs every unary and server-streaming call of a ``grpc.aio`` channel
through a `Guard`::

    import grpc
    from a2a.types import a2a_pb2_grpc

    from a2a_client_errors import Guard, ReconcileNeeded
    from a2a_client_errors.integrations.grpc import GuardInterceptor

    guarded = GuardInterceptor(Guard())
    channel = grpc.aio.insecure_channel(target, interceptors=guarded.interceptors)
    stub = a2a_pb2_grpc.A2AServiceStub(channel)
    try:
        task = await stub.GetTask(request, timeout=30.0)
    except ReconcileNeeded as failure:
        ...  # failure.reason is TASK_NOT_FOUND, say; failure.__cause__ the AioRpcError

Pass ``guarded.interceptors`` (one interceptor per call arity), not ``[guarded]``: grpcio's
``grpc.aio.Channel`` files an interceptor that implements several arities under the first
one only (unary-unary; grpc/grpc#31442, still so in grpcio 1.85), so ``[guarded]`` alone
guards unary calls and leaves streams unguarded.

Each call's status and trailers (the ``google.rpc.Status`` in ``grpc-status-details-bin``,
``grpc-retry-pushback-ms``) are judged by the Guard, reason first:

* Unary calls: a retry resends the *same* request message (the same ``message_id`` for
  SendMessage) after the Guard's backoff, within its attempts, its deadline and the peer's
  retry budget; hooks see every decision. Any other final decision raises the `CallFailed`
  subclass that names it (`ReconcileNeeded`, `DegradeNeeded`, `AuthFailed`, `RetryExhausted`,
  ...), chained from the ``grpc.aio.AioRpcError``. A SendMessage whose message has no
  ``message_id`` is never resent (a resend could create a second task).
* Server streams (SendStreamingMessage, SubscribeToTask): a failure before the first message
  is judged like a unary one, and the stream is reopened with the same request. After the
  first message nothing is resent: an error ends the stream with its `CallFailed` subclass
  (chained from the ``AioRpcError``, its decision's ``give_up`` set to
  `GiveUp.STREAM_STARTED` when the policy would have retried), raised after every message
  received was yielded, so the caller can resubscribe (``SubscribeToTask``) or read the task.
  Hooks see that decision too. The interceptor never resubscribes by itself.

Before each attempt, the interceptor waits for the channel to have a connection, as gRPC
itself would before making the call (`connect`). A channel that cannot connect (the agent is
down, the port refuses, TLS fails) fails the attempt with `NotConnectedError` before the call
is made: *not sent*, so even a SendMessage is retried at once (or, under ``guard_client``,
goes over the agent's next interface). Without that wait, gRPC's own error for it (UNAVAILABLE,
"failed to connect to all addresses") is indistinguishable from the one for a connection that
broke after the request went out: the same code, no details, no metadata; only the text (and
``debug_error_string()``, which repeats it) differs, and text is never parsed. Such an
UNAVAILABLE stays *unknown*. What the wait cannot see: a connection that breaks between the
wait and the call (gRPC then reconnects, and its failure is *unknown*), and a call cut short by
the Guard's deadline while it waits (*unknown*, as any attempt cut short).

The A2A operation comes from the method path (``/lf.a2a.v1.A2AService/<Method>``, or the
0.3 service ``/a2a.v1.A2AService/<Method>``), for per-operation overrides and for hooks. The
peer, which keys the retry budget and the hooks' events, is the channel's target unless
``peer=`` is given.

grpcio is imported by this module only: importing ``a2a_client_errors`` never needs it.

The server side's interceptor is `a2a_client_errors.server.A2AErrorInterceptor`; the name
``A2AErrorInterceptor`` here is a deprecated alias of it, kept for one release.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._guard import CallShape
from a2a_client_errors._journal import entry_for, task_made
from a2a_client_errors._lookup import WORK_OPERATIONS
from a2a_client_errors._normalize import NotSentError
from a2a_client_errors._operations import (
    GRPC_SERVICE,
    LEGACY_GRPC_SERVICE,
    OPERATION_OF_LEGACY_RPC,
)
from a2a_client_errors._policy import GiveUp

try:
    import grpc
    import grpc.aio
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "a2a_client_errors.integrations.grpc needs grpcio: pip install 'a2a-client-errors[grpc]'",
        name=exc.name,
    ) from exc

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from a2a_client_errors._guard import Guard

__all__ = [
    "GuardInterceptor",
    "NotConnectedError",
    "connect",
    "operation_of",
]


def operation_of(method: str | bytes) -> str | None:
    """The A2A operation a gRPC method path names.

    Args:
        method: the full method path, as ``ClientCallDetails.method`` holds it (bytes or str).

    Returns:
        The operation (``"SendMessage"``, ``"SubscribeToTask"``, ...) for a method of the A2A
        service, 1.0 (``lf.a2a.v1``) or 0.3 (``a2a.v1``, whose names are mapped to 1.0's), or
        None for a method of another service.

    Example:
        >>> operation_of(b"/lf.a2a.v1.A2AService/SendMessage")
        'SendMessage'
        >>> operation_of("/a2a.v1.A2AService/TaskSubscription")
        'SubscribeToTask'

    """
    path = method.decode("utf-8", "replace") if isinstance(method, bytes) else str(method)
    service, slash, name = path.removeprefix("/").partition("/")
    if not slash or not name or "/" in name:
        return None
    if service == GRPC_SERVICE:
        return name
    if service == LEGACY_GRPC_SERVICE:
        return OPERATION_OF_LEGACY_RPC.get(name, name)
    return None


def _shape(
    guard: Guard, operation: str | None, request: object, peer: str | None, method: object
) -> CallShape:
    """What a call is: its resend safety; under a journal, what it records of a send."""
    unsafe = _unsafe(operation, request)
    if guard.journal is None or operation not in WORK_OPERATIONS or unsafe is not None:
        return CallShape(operation, unsafe)
    message = getattr(request, "message", None) or getattr(request, "request", None)
    name = method.decode() if isinstance(method, bytes) else str(method)
    entry = entry_for(message, f"grpc://{peer}#{name}")
    if entry is None:
        return CallShape(operation, unsafe)
    sent = entry.sent_at(guard.exactly_once.wall_clock())
    return CallShape(operation, unsafe, sent=sent, entry=entry)


def _unsafe(operation: str | None, request: object) -> GiveUp | None:
    """Why resending ``request`` would be unsafe: a SendMessage without a ``message_id``."""
    if operation not in WORK_OPERATIONS:
        return None
    # 1.0 names the message field ``message``; 0.3 named it ``request``.
    for field in ("message", "request"):
        message_id = getattr(getattr(request, field, None), "message_id", None)
        if isinstance(message_id, str) and message_id:
            return None
    return GiveUp.NO_MESSAGE_ID


# --- nothing sent: a channel that cannot connect -------------------------------------------

_READY: Final = grpc.ChannelConnectivity.READY
_FAILING: Final = grpc.ChannelConnectivity.TRANSIENT_FAILURE
_WAITED: Final = frozenset(
    {grpc.ChannelConnectivity.IDLE, grpc.ChannelConnectivity.CONNECTING, _FAILING}
)
"""The states in which a call waits for a connection (or fails, when it does not wait)."""
_STATES: Final[Mapping[object, grpc.ChannelConnectivity]] = MappingProxyType(
    {state.value[0]: state for state in grpc.ChannelConnectivity}
)


class NotConnectedError(grpc.aio.AioRpcError, NotSentError):  # type: ignore[misc]
    """The error of a call `connect` did not let go: its channel had no connection.

    It is the ``grpc.aio.AioRpcError`` gRPC raises for such a call (UNAVAILABLE; or
    DEADLINE_EXCEEDED when the call's time ran out while the channel was still connecting),
    with no metadata, and a `NotSentError`: `normalize` reads it, and an a2a-sdk error raised
    from it, as *not sent*.

    Args:
        code: UNAVAILABLE or DEADLINE_EXCEEDED.
        details: what happened, in words of this package.

    """

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


async def connect(
    channel: Any, *, timeout: float | None = None, wait_for_ready: bool = False
) -> None:
    """Wait until ``channel`` has a connection for a call; raise `NotConnectedError` if none.

    gRPC makes a call only over a ready connection, and fails a call at once (UNAVAILABLE)
    while its channel cannot connect: nothing is sent. But that error is indistinguishable
    from the one for a connection reset after the request went out. Waiting here, before the
    call is made, as gRPC would, tells them apart by construction: a call this refuses was
    never made. A ready channel costs one state read.

    Args:
        channel: a ``grpc.aio.Channel`` (anything with its ``get_state`` and
            ``wait_for_state_change``).
        timeout: the longest to wait, in seconds (the call's time left); None: as long as
            connecting takes (gRPC gives up a connection attempt after 20 s).
        wait_for_ready: the call's ``wait_for_ready``: wait through a failing channel, as
            gRPC does for such a call, instead of failing at once.

    Raises:
        NotConnectedError: UNAVAILABLE when the channel is failing to connect
            (TRANSIENT_FAILURE), DEADLINE_EXCEEDED when ``timeout`` passed first. Nothing was
            sent. A closed channel, or a state this package does not know, raises nothing:
            the call goes, and gRPC decides.

    """
    state = channel.get_state(True)
    if state is _READY:
        return
    loop = asyncio.get_running_loop()
    ends = None if timeout is None else loop.time() + timeout
    while state is not _READY:
        if state not in _WAITED:
            return  # closed, or a state this package does not know: gRPC decides
        if state is _FAILING and not wait_for_ready:
            raise NotConnectedError(
                grpc.StatusCode.UNAVAILABLE,
                "the channel could not connect (TRANSIENT_FAILURE): the call was not made",
            )
        left = None if ends is None else ends - loop.time()
        if left is not None and left <= 0:
            raise NotConnectedError(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "the call's time ran out before the channel connected: the call was not made",
            )
        try:
            await asyncio.wait_for(channel.wait_for_state_change(state), left)
        except asyncio.TimeoutError:
            continue  # its time is up: said above, on the next turn
        state = channel.get_state(True)


class _CoreChannel:
    """The connectivity of the channel a ``grpc.aio`` call runs on, read as `connect` reads it.

    An interceptor sees grpcio's core channel, not the ``grpc.aio.Channel``; this reads its
    state the way ``grpc.aio.Channel`` does. Should grpcio change it, an error says "state
    unknown" (None), and the call goes as it would without the wait.
    """

    __slots__ = ("_core", "_failed")

    def __init__(self, core: Any) -> None:
        self._core = core
        self._failed = False

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity | None:
        """The channel's state; None when it cannot be read."""
        if self._failed:
            return None
        try:
            return _STATES.get(self._core.check_connectivity_state(try_to_connect))
        except Exception:  # grpcio of another shape: no wait, the call decides
            self._failed = True
            return None

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        """Return once the state is no longer ``last_observed_state`` (or cannot be watched)."""
        try:
            await self._core.watch_connectivity_state(last_observed_state.value[0], None)
        except Exception:  # grpcio of another shape: the next read says unknown
            self._failed = True


def _core_of(continuation: object) -> Any:
    """The core channel (grpcio's) a call runs on, or None when it cannot be found.

    ``grpc.aio`` hands interceptors a ``functools.partial`` of its intercepted call's bound
    method; the call holds the channel.
    """
    try:
        owner = getattr(getattr(continuation, "func", None), "__self__", None)
        return getattr(owner, "_channel", None)
    except Exception:  # a grpc.aio of another shape: no channel
        return None


def _channel_of(continuation: object) -> _CoreChannel | None:
    """The connectivity of the channel a call runs on, or None (no wait before the call)."""
    core = _core_of(continuation)
    if callable(getattr(core, "check_connectivity_state", None)) and callable(
        getattr(core, "watch_connectivity_state", None)
    ):
        return _CoreChannel(core)
    return None


def _target_of(continuation: object) -> str | None:
    """The target of the channel a call runs on (what it was built with), or None."""
    try:
        target = getattr(_core_of(continuation), "target", None)
    except Exception:  # a grpc.aio of another shape: no target, the Guard's default peer
        return None
    if isinstance(target, bytes):
        target = target.decode("utf-8", "replace")
    return target if isinstance(target, str) and target else None


class _Attempts:
    """The call details of each attempt: the call's own, with the time left as its timeout."""

    __slots__ = ("_clock", "_details", "_ends_at")

    def __init__(self, guard: Guard, details: Any, limit: float | None) -> None:
        self._details = details
        self._clock = guard.clock
        self._ends_at = None if limit is None else guard.clock() + limit

    def left(self) -> float | None:
        """The time left for the call, in seconds (None: not bounded)."""
        return None if self._ends_at is None else max(0.0, self._ends_at - self._clock())

    def next(self) -> Any:
        """The details of the next attempt."""
        details = self._details
        left = self.left()
        if left is None:
            return details
        return grpc.aio.ClientCallDetails(
            details.method, left, details.metadata, details.credentials, details.wait_for_ready
        )

    async def connected(self, channel: _CoreChannel | None) -> None:
        """Wait for the channel's connection within the time left (`connect`), if it is known."""
        if channel is not None:
            await connect(
                channel, timeout=self.left(), wait_for_ready=bool(self._details.wait_for_ready)
            )


@dataclass(frozen=True, slots=True)
class _Opened:
    """A stream that opened: its call, its responses, and its first message (if any)."""

    call: Any
    responses: AsyncIterator[Any]
    first: Any
    empty: bool


# grpc ships no types: its interceptor bases are Any to mypy.
class GuardInterceptor(
    grpc.aio.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.aio.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """A ``grpc.aio`` client interceptor that runs unary and server-streaming calls under a Guard.

    Give the channel its `interceptors` (``grpc.aio.insecure_channel(target,
    interceptors=GuardInterceptor(guard).interceptors)``, or ``secure_channel``): grpcio
    registers an object that implements several arities for the first only (grpc/grpc#31442),
    so ``interceptors=[GuardInterceptor(guard)]`` guards unary calls only. Client-streaming
    and bidirectional calls are not intercepted (A2A has none).

    Unary calls (``await stub.GetTask(request)``) return the response or raise the
    `CallFailed` subclass of the final decision, chained from the last ``AioRpcError``. The
    call object of the successful attempt is the one handed back, so its ``code()``,
    ``initial_metadata()`` and ``trailing_metadata()`` are the answer's; after a failure
    they raise the `CallFailed`, as awaiting the call does.

    Streaming calls (``async for response in stub.SendStreamingMessage(request)``) are
    opened, retried before their first message, and then relayed as they come (see the
    module's docstring for what happens after the first message). ``cancel()`` cancels the
    attempt that is running.

    Deadlines: the call's own ``timeout`` is the Guard's deadline for the call, across
    attempts: each attempt is sent with the time left as its timeout, and no retry starts
    that could not begin before it. A unary call without a ``timeout`` gets the Guard's
    ``deadline`` (if it has one) the same way; a stream without one is not bounded (the
    Guard's deadline still bounds its retries before the first message).

    Args:
        guard: the Guard whose policy, backoff, retry budgets, deadline and hooks apply.
        peer: the key of the peer's retry budget and of the hooks' events (default: the
            channel's target, such as ``"agent.example:443"``).

    Attributes:
        guard: the Guard.
        peer: the ``peer=`` given, or None (the channel's target).
        interceptors: this interceptor as one single-arity interceptor per call kind
            (unary-unary, unary-stream), the list to pass to the channel.

    """

    def __init__(self, guard: Guard, *, peer: str | None = None) -> None:
        self.guard = guard
        self.peer = peer
        self.interceptors: list[Any] = [_UnaryUnary(self), _UnaryStream(self)]

    async def intercept_unary_unary(
        self,
        continuation: Callable[[Any, Any], Awaitable[Any]],
        client_call_details: Any,
        request: Any,
    ) -> Any:
        """Run a unary call under the guard.

        Args:
            continuation: runs the next interceptor, or the call itself.
            client_call_details: the call's method, timeout, metadata and credentials.
            request: the request message, sent as it is by every attempt.

        Returns:
            The call of the attempt that succeeded (awaiting it gives the response).

        Raises:
            CallFailed: the subclass of the final decision, chained from the
                ``grpc.aio.AioRpcError`` of the last attempt.

        """
        guard = self.guard
        operation = operation_of(client_call_details.method)
        timeout = client_call_details.timeout
        attempts = _Attempts(
            guard, client_call_details, guard.deadline if timeout is None else timeout
        )
        channel = _channel_of(continuation)

        answered: list[Any] = []

        async def attempt() -> Any:
            await attempts.connected(channel)
            call = await continuation(attempts.next(), request)
            answered[:] = [await call]  # raises the AioRpcError of a failed call
            return call

        peer = self.peer or _target_of(continuation)
        shape = _shape(guard, operation, request, peer, client_call_details.method)
        if shape.entry is not None:
            shape = replace(shape, made=lambda _call: task_made(answered[0] if answered else None))
        return await guard.begin(  # the Guard's door API, as its transports use it
            peer=peer, shape=shape, deadline=timeout
        ).arun(attempt)

    async def intercept_unary_stream(
        self,
        continuation: Callable[[Any, Any], Awaitable[Any]],
        client_call_details: Any,
        request: Any,
    ) -> AsyncIterator[Any]:
        """Open a server stream under the guard, and relay it.

        Args:
            continuation: runs the next interceptor, or the call itself.
            client_call_details: the call's method, timeout, metadata and credentials.
            request: the request message, sent as it is by every attempt to open the stream.

        Returns:
            The stream's messages, as an async iterator; it raises the `CallFailed` of an
            error that ends the stream after its first message.

        Raises:
            CallFailed: the subclass of the final decision when the stream could not be
                opened (no message came), chained from the last ``AioRpcError``.

        """
        guard = self.guard
        operation = operation_of(client_call_details.method)
        peer = self.peer or _target_of(continuation)
        timeout = client_call_details.timeout
        attempts = _Attempts(guard, client_call_details, timeout)
        channel = _channel_of(continuation)

        async def attempt() -> _Opened:
            await attempts.connected(channel)
            call = await continuation(attempts.next(), request)
            responses = aiter(call)
            try:
                first = await anext(responses)
            except StopAsyncIteration:
                return _Opened(call, responses, None, empty=True)
            return _Opened(call, responses, first, empty=False)

        shape = _shape(guard, operation, request, peer, client_call_details.method)
        if shape.entry is not None:
            shape = replace(shape, made=lambda opened: task_made(opened.first))
        opened: _Opened = await guard.begin(peer=peer, shape=shape, deadline=timeout).arun(attempt)
        return self._relay(opened, operation, peer)

    async def _relay(
        self, opened: _Opened, operation: str | None, peer: str | None
    ) -> AsyncIterator[Any]:
        """Yield the stream's messages; judge (never retry) an error that ends it."""
        try:
            if opened.empty:
                return
            yield opened.first
            responses = opened.responses
            while True:
                try:
                    response = await anext(responses)
                except StopAsyncIteration:
                    return
                except grpc.RpcError as exc:
                    await self._interrupted(exc, operation, peer)
                    raise  # the Guard saw no failure in it: an error is never swallowed
                yield response
        finally:
            call = opened.call
            if not call.done():  # the consumer stopped early: end the RPC with it
                call.cancel()

    async def _interrupted(
        self, exc: BaseException, operation: str | None, peer: str | None
    ) -> None:
        """Raise the `CallFailed` of an error after the first message (hooks see it).

        The Guard judges it once with `GiveUp.STREAM_STARTED`, so it never resends it: a
        retry decision ends as `RetryExhausted`. With ``refresh_credentials``, an auth error
        runs the refresh, and is judged once more (the same error) before `AuthFailed`.
        """

        async def again() -> object:
            # Judged once, never resent: the messages before it were already delivered.
            raise exc

        shape = CallShape(operation, GiveUp.STREAM_STARTED)
        _: object = await self.guard.begin(peer=peer, shape=shape).arun(again)


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The unary-unary side of a `GuardInterceptor`, alone (grpcio files it by its one arity)."""

    def __init__(self, owner: GuardInterceptor) -> None:
        self.owner = owner

    async def intercept_unary_unary(
        self,
        continuation: Callable[[Any, Any], Awaitable[Any]],
        client_call_details: Any,
        request: Any,
    ) -> Any:
        """Run a unary call under the owner's guard (see `GuardInterceptor`)."""
        return await self.owner.intercept_unary_unary(continuation, client_call_details, request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """The unary-stream side of a `GuardInterceptor`, alone (grpcio files it by its one arity)."""

    def __init__(self, owner: GuardInterceptor) -> None:
        self.owner = owner

    async def intercept_unary_stream(
        self,
        continuation: Callable[[Any, Any], Awaitable[Any]],
        client_call_details: Any,
        request: Any,
    ) -> AsyncIterator[Any]:
        """Open and relay a server stream under the owner's guard (see `GuardInterceptor`)."""
        return await self.owner.intercept_unary_stream(continuation, client_call_details, request)


def __getattr__(name: str) -> Any:
    """``A2AErrorInterceptor``, deprecated here: it is ``a2a_client_errors.server``'s now."""
    if name == "A2AErrorInterceptor":
        warnings.warn(
            "a2a_client_errors.integrations.grpc.A2AErrorInterceptor is deprecated: import it "
            "from a2a_client_errors.server (this alias goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        from a2a_client_errors.server import A2AErrorInterceptor  # noqa: PLC0415

        return A2AErrorInterceptor
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
