"""Decision handlers: what a guarded client does about a decision other than retry.

A `GuardedClient` (see `a2a_client_errors.integrations.a2a_sdk`) hands every final decision but
``ok`` and ``retry`` to its `DecisionHandlers`: one coroutine per action, each given the
`Situation` (the failure, the operation, the request, the client). A handler returns what the
operation returns instead, or raises (the failure itself, by default). Subclass and override
the actions you decide differently; what you do not override keeps the defaults below.

Defaults:

* reconcile:
    * CancelTask refused with TASK_NOT_CANCELABLE: the task has already ended (the cancel lost
      the race). The task is read with GetTask and returned, its metadata marked
      ``{"a2a_client_errors": {"cancel": "lost_race"}}`` so that nobody takes it for a
      successful cancel. When an earlier attempt of the same cancel may have been processed
      (its answer was lost) and the task is CANCELED, that attempt canceled it: the task is
      returned unmarked, a cancel that succeeded.
    * TASK_NOT_FOUND: `DecisionHandlers.task_gone` is told (drop your local handle there),
      and the failure is raised: whether to create the task again is the orchestrator's call.
    * TASK_GENERATION_MISMATCH (draft A2A 1.1: the task changed since the client read it): the
      task is read again with GetTask and the `ReconcileNeeded` raised carries it
      (``failure.task``); the request is never resent as it is.
* degrade:
    * CancelTask refused as unsupported (or with no reason: a2a-sdk 0.3's gRPC server
      answers a task that cannot be canceled with a bare UNIMPLEMENTED): the task is read,
      and returned marked as a lost race when it has ended; else the failure is raised.
    * GetExtendedAgentCard refused: the public card the client already has is returned.
    * SubscribeToTask refused with UNSUPPORTED_OPERATION (the task is terminal, or the peer
      does not stream): the task is read with GetTask and becomes the stream's one event.
    * A streaming SendMessage refused with UNSUPPORTED_OPERATION: the message is sent again
      without streaming (``return_immediately``), and the task polled with GetTask
      (`poll_task`: capped backoff, bounded) until it is terminal or interrupted; the stream
      yields the first answer and the last task read.
    * A SendMessage that asks for push notifications, refused with
      PUSH_NOTIFICATION_NOT_SUPPORTED (or not sent, the card saying so): the message is sent
      without the push configuration, and its task polled the same way.
    * CreateTaskPushNotificationConfig refused: a `Polling` of the task is returned instead of
      the configuration: iterate it for the task's changes, as the push notifications would
      have told them.
    * anything else is raised.
* fix_request, once per call:
    * VERSION_NOT_SUPPORTED: the agent card is read again (the peer may have changed since the
      client was built), and the best version both sides support (this client's ``versions``,
      in order of preference; the peer's from the card's interfaces and from the error's
      ``supportedVersions``) is sent as ``A2A-Version``, and the request resent once. Never a
      silent downgrade: a version older than the one refused is taken only with
      ``allow_downgrade=True``.
    * EXTENSION_SUPPORT_REQUIRED: the agent card is read again, the extensions it requires
      that the request did not declare are added to ``A2A-Extensions``, and the request resent
      once, only if every one of them is in ``allowed_extensions``. (Before any call,
      `DecisionHandlers.prepare` already declares the card's required extensions that are
      allowed, so that a peer enforcing them is not asked in vain first.)
    * anything else (CONTENT_TYPE_NOT_SUPPORTED: the BadRequest detail names the part) raises.
* report, auth: raised as they are (a peer that broke the contract; credentials the Guard
  already tried to refresh once).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._failures import ReconcileNeeded
from a2a_client_errors._outcomes import task_outcome
from a2a_client_errors._reasons import Action, Reason
from a2a_client_errors.integrations.a2a_sdk._compat import (
    client_card,
    client_config,
    client_transport,
    line,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Collection, Mapping, Sequence

    from a2a_client_errors._failures import CallFailed
    from a2a_client_errors._policy import Decision

_log = logging.getLogger("a2a_client_errors")

__all__ = ["LOST_RACE", "DecisionHandlers", "Polling", "Situation", "poll_task"]

LOST_RACE: Final = {"a2a_client_errors": {"cancel": "lost_race"}}
"""The metadata a task read after a lost cancel race carries."""

VERSION_HEADER: Final = "A2A-Version"
EXTENSIONS_HEADER: Final = "A2A-Extensions"
_RESENT: Final = "a2a_client_errors.resent"
_SENT_AGAIN: Final = frozenset(
    {Reason.UNSUPPORTED_OPERATION, Reason.PUSH_NOTIFICATION_NOT_SUPPORTED}
)


@dataclass(frozen=True, slots=True)
class Situation:
    """What a decision handler is given.

    Attributes:
        failure: the `CallFailed` the Guard raised; ``failure.decision`` is the decision.
        operation: the A2A operation (``"CancelTask"``, ...).
        request: the request the operation was called with.
        client: the `GuardedClient`, for follow-up calls (they are guarded too).
        context: the a2a-sdk call context, if any.
        options: the call's other keyword arguments, passed on as they were (a2a-sdk 0.3's
            ``configuration``, ``request_metadata``, ``extensions``).
    """

    failure: CallFailed
    operation: str
    request: Any
    client: Any
    context: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def decision(self) -> Decision:
        """The decision to carry out."""
        return self.failure.decision

    @property
    def reason(self) -> Reason | str | None:
        """The decision's reason."""
        return self.failure.decision.reason


class DecisionHandlers:
    """One handler per action; subclass to decide differently (see the module's defaults).

    Args:
        versions: the A2A versions this client speaks, most preferred first.
        allow_downgrade: whether a refused version may be replaced by an older one.
        allowed_extensions: the extension URIs this client may declare when a peer requires
            them.
    """

    def __init__(
        self,
        *,
        versions: Sequence[str] = ("1.0",),
        allow_downgrade: bool = False,
        allowed_extensions: Collection[str] = (),
    ) -> None:
        self.versions = tuple(versions)
        self.allow_downgrade = allow_downgrade
        self.allowed_extensions = frozenset(allowed_extensions)

    async def handle(self, situation: Situation) -> Any:
        """Run the handler of the situation's action."""
        action = situation.decision.action
        if action is Action.RECONCILE:
            return await self.reconcile(situation)
        if action is Action.DEGRADE:
            return await self.degrade(situation)
        if action is Action.FIX_REQUEST:
            return await self.fix_request(situation)
        if action is Action.AUTH:
            return await self.auth(situation)
        return await self.report(situation)

    async def reconcile(self, situation: Situation) -> Any:
        """The client's view of the task is stale: read it, or let go of it."""
        if situation.operation == "CancelTask" and situation.reason == Reason.TASK_NOT_CANCELABLE:
            sdk = line()
            task = await situation.client.get_task(sdk.task_request(situation.request.id))
            outcome = task_outcome(task)
            canceled = outcome is not None and outcome.state == "TASK_STATE_CANCELED"
            if not (situation.failure.maybe_processed and canceled):
                task = sdk.marked(task, LOST_RACE)
            # Else an earlier attempt, whose answer was lost, canceled it: the cancel succeeded.
            return task
        if situation.reason == Reason.TASK_NOT_FOUND:
            await self.task_gone(situation)
        if situation.reason == Reason.TASK_GENERATION_MISMATCH:
            await self._read_again(situation)
        raise situation.failure

    @staticmethod
    async def _read_again(situation: Situation) -> None:
        """A stale generation (draft 1.1): read the task again and hand it to the orchestrator.

        Never resent as it is: the orchestrator decides whether to send against the fresh
        generation. The failure carries the task read (``failure.task``), or none when the
        request names no task or the read fails (logged).
        """
        request = situation.request
        task_id = getattr(request, "id", "") or getattr(
            getattr(request, "message", None), "task_id", ""
        )
        if not task_id or situation.operation == "GetTask":
            return
        try:
            task = await situation.client.get_task(
                line().task_request(task_id), context=situation.context
            )
        except Exception as exc:  # the failure stands as it is, without the task
            _log.warning(
                "could not read task again after TASK_GENERATION_MISMATCH (%s)", type(exc).__name__
            )
            return
        failure = situation.failure
        if isinstance(failure, ReconcileNeeded):
            failure.task = task

    async def task_gone(self, situation: Situation) -> None:
        """The peer knows no such task (any more): drop the local handle here. Default: none."""

    async def degrade(self, situation: Situation) -> Any:
        """The peer lacks a capability: fall back where the protocol offers a way."""
        operation = situation.operation
        if operation == "CancelTask":
            # Refused as unsupported, or with no reason (a2a-sdk 0.3's gRPC server answers a
            # task that cannot be canceled with a bare UNIMPLEMENTED): a task that has ended
            # is what a lost race returns; one still running leaves the failure standing.
            task = await situation.client.get_task(line().task_request(situation.request.id))
            outcome = task_outcome(task)
            if outcome is not None and outcome.is_terminal:
                return line().marked(task, LOST_RACE)
            raise situation.failure
        if operation == "GetExtendedAgentCard":
            card = client_card(situation.client.client)
            if card is not None:
                return card
        if operation == "SendMessage" and situation.reason in _SENT_AGAIN:
            transport = client_transport(situation.client.client)
            if transport is not None:
                return _send_and_poll(situation, transport)
        task_id: str = getattr(situation.request, "task_id", "")
        if (
            operation == "CreateTaskPushNotificationConfig"
            and situation.reason == Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
            and task_id
        ):
            return Polling(situation.client, task_id, situation.decision)
        if operation == "SubscribeToTask" and situation.reason == Reason.UNSUPPORTED_OPERATION:
            sdk = line()
            task = await situation.client.get_task(sdk.task_request(situation.request.id))
            return sdk.task_event(task)
        raise situation.failure

    async def fix_request(self, situation: Situation) -> Any:
        """The request must change before it is sent again: a version, or an extension."""
        state = getattr(situation.context, "state", None) or {}
        sdk = line()
        if state.get(_RESENT) or situation.operation not in sdk.methods:
            raise situation.failure  # resent once already: the fix did not help
        if not sdk.sets_service_parameters:
            raise situation.failure  # a2a-sdk 0.3 sends no version nor extensions per call
        parameters = dict(getattr(situation.context, "service_parameters", None) or {})
        if situation.reason == Reason.VERSION_NOT_SUPPORTED:
            card = await _fresh_card(situation.client)
            parameters[VERSION_HEADER] = self._version(
                situation, card, parameters.get(VERSION_HEADER)
            )
        elif situation.reason == Reason.EXTENSION_SUPPORT_REQUIRED:
            card = await _fresh_card(situation.client)
            parameters[EXTENSIONS_HEADER] = self._extensions(
                situation, card, parameters.get(EXTENSIONS_HEADER, "")
            )
        else:
            raise situation.failure
        return _resend(situation, parameters)

    def _version(self, situation: Situation, card: Any, refused: str | None) -> str:
        """The best version both sides speak, or the failure when there is none to take."""
        theirs = {
            interface.protocol_version
            for interface in line().interfaces(card)
            if interface.protocol_version
        }
        error = situation.decision.error
        if error is not None:
            theirs.update(error.supported_versions)
        for version in self.versions:
            if version not in theirs or version == refused:
                continue
            if refused and _older(version, refused) and not self.allow_downgrade:
                break
            return version
        raise situation.failure

    def _extensions(self, situation: Situation, card: Any, declared: str) -> str:
        """The declared extensions plus the card's required ones, when all are allowed."""
        have = _uris(declared)
        missing = required_extensions(card) - have
        if not missing or not missing <= self.allowed_extensions:
            raise situation.failure
        return ",".join(sorted(have | missing))

    def prepare(self, card: Any, context: Any) -> Any:
        """The call context to send with: the card's required extensions that are allowed, added.

        Run before every call of a guarded client. An extension the card requires but
        ``allowed_extensions`` does not name is not declared, and the call is sent as it is:
        the extension may come from an interceptor, and not every peer enforces what its card
        says. If the peer does, its EXTENSION_SUPPORT_REQUIRED reaches `fix_request`.

        Args:
            card: the peer's agent card (None: the context is returned as it is).
            context: the a2a-sdk ``ClientCallContext`` of the call, or None.
        """
        if not self.allowed_extensions:
            return context
        wanted = required_extensions(card) & self.allowed_extensions
        if not wanted:
            return context
        parameters = dict(getattr(context, "service_parameters", None) or {})
        have = _uris(parameters.get(EXTENSIONS_HEADER, ""))
        if wanted <= have:
            return context
        parameters[EXTENSIONS_HEADER] = ",".join(sorted(have | wanted))
        prepared = line().call_context(context, parameters, None)
        return context if prepared is None else prepared

    async def report(self, situation: Situation) -> Any:
        """The peer broke the contract, or said something unknown. Default: raise."""
        raise situation.failure

    async def auth(self, situation: Situation) -> Any:
        """Credentials were refused (after the Guard's one refresh). Default: raise."""
        raise situation.failure


async def _fresh_card(client: Any) -> Any:
    """The peer's card read again when the client can (`GuardedClient.read_card`), else held."""
    read_card = getattr(client, "read_card", None)
    if callable(read_card):
        return await read_card()
    return client_card(getattr(client, "client", None))


def required_extensions(card: Any) -> frozenset[str]:
    """The extension URIs an agent card marks ``required`` (none for no card)."""
    capabilities = getattr(card, "capabilities", None)
    return frozenset(
        extension.uri
        for extension in getattr(capabilities, "extensions", ())
        if extension.required and extension.uri
    )


def _uris(declared: str) -> set[str]:
    """The URIs of an ``A2A-Extensions`` value (comma-separated)."""
    return {uri.strip() for uri in declared.split(",") if uri.strip()}


def _is_final(task: Any) -> bool:
    outcome = task_outcome(task)
    return outcome is not None and outcome.is_final


async def _polls(
    client: Any, task_id: str, *, initial: float, cap: float, max_polls: int
) -> AsyncIterator[Any]:
    """Every read of a task, spaced by a capped backoff, until final or ``max_polls`` reads."""
    request = line().task_request(task_id)
    delay = initial
    for poll in range(max_polls):
        task = await client.get_task(request)
        yield task
        if _is_final(task) or poll == max_polls - 1:
            return
        await client.guard.asleep(delay)  # the Guard's sleep: injected in tests
        delay = min(cap, delay * 2)


async def poll_task(
    client: Any,
    task_id: str,
    *,
    initial: float = 0.5,
    cap: float = 10.0,
    max_polls: int = 60,
) -> Any:
    """Read a task with GetTask until it is terminal or interrupted; return the last read.

    The polls are spaced by a capped exponential backoff (``initial``, doubling, at most
    ``cap`` seconds), slept with the guarded client's Guard (so tests inject the sleep), and
    bounded by ``max_polls``: the last task read is returned even if it is still working.

    Args:
        client: a `GuardedClient` (every GetTask is guarded).
        task_id: the task to read.
        initial: the first pause, in seconds.
        cap: the longest pause, in seconds.
        max_polls: the most GetTask calls made.
    """
    last = None
    async for task in _polls(client, task_id, initial=initial, cap=cap, max_polls=max_polls):
        last = task
    return last


class Polling:
    """What a refused push configuration gives instead: the task's changes, read by polling.

    Iterate it (``async for task in polling``) to get the task each time it has changed
    since the last read (its status, artifacts or history), the first read included, until it
    is terminal or interrupted, or ``max_polls`` reads were made. Each iteration polls afresh.

    Attributes:
        client: the `GuardedClient` that reads the task (every GetTask is guarded).
        task_id: the task.
        decision: the decision that made polling necessary (PUSH_NOTIFICATION_NOT_SUPPORTED).
        initial: the first pause, in seconds.
        cap: the longest pause, in seconds.
        max_polls: the most GetTask calls made per iteration.
    """

    def __init__(
        self,
        client: Any,
        task_id: str,
        decision: Decision,
        *,
        initial: float = 0.5,
        cap: float = 10.0,
        max_polls: int = 60,
    ) -> None:
        self.client = client
        self.task_id = task_id
        self.decision = decision
        self.initial = initial
        self.cap = cap
        self.max_polls = max_polls

    def __repr__(self) -> str:
        return f"Polling(task_id={self.task_id!r}, reason={self.decision.reason!s})"

    async def __aiter__(self) -> AsyncIterator[Any]:
        seen = b""
        reads = _polls(
            self.client,
            self.task_id,
            initial=self.initial,
            cap=self.cap,
            max_polls=self.max_polls,
        )
        async for task in reads:
            read = line().snapshot(task)
            if read != seen:
                seen = read
                yield task


async def _send_and_poll(situation: Situation, transport: Any) -> AsyncIterator[Any]:
    """Send the message without streaming or push, then poll its task to a final state."""
    sdk = line()
    client = situation.client
    config = client_config(client.client)
    args, kwargs = sdk.polling_send(situation.request, situation.options, config)
    answered = getattr(client, "answered", None)  # the agent's bytes judged, as for its calls
    send = transport.send_message if answered is None else answered(transport.send_message)
    response = await client.guard.acall(
        send,
        *args,
        context=situation.context,
        operation="SendMessage",
        peer=client.peer,
        **kwargs,
    )
    event, task = sdk.answer_events(response)
    yield event
    if task is not None and not _is_final(task):
        final = await poll_task(client, task.id)
        yield sdk.task_event(final)


def _older(version: str, than: str) -> bool:
    """Whether ``version`` (Major.Minor) is older than ``than``; unreadable ones are not."""
    key = _version_key(version)
    other = _version_key(than)
    return key is not None and other is not None and key < other


def _version_key(version: str) -> tuple[int, ...] | None:
    if not re.fullmatch(r"\d+(\.\d+)*", version.strip()):
        return None
    return tuple(int(part) for part in version.strip().split("."))


def _resend(situation: Situation, parameters: dict[str, str]) -> Any:
    """Send the request once more, through the guarded client, with new service parameters.

    The new context is marked, so that the same fix is not tried twice. A stream comes back
    as the stream itself (its caller iterates it); a unary call as its awaitable.
    """
    context = situation.context
    state = {**(getattr(context, "state", None) or {}), _RESENT: True}
    sdk = line()
    context = sdk.call_context(context, parameters, state)
    method = getattr(situation.client, sdk.methods[situation.operation])
    return method(situation.request, context=context, **situation.options)
