"""google-adk: a failed A2A call reaches the application typed, on ADK's own error event.

google-adk's ``RemoteA2aAgent`` catches every exception its A2A client raises and yields an
``Event(error_message="A2A request failed: ...")`` in its place, with no ``error_code``: the
`CallFailed`'s decision (its reason and action, the messageId, whether the message may have
been processed) stops there. `FailedCalls` carries it on:

* ``failures.factory(config, guard)`` is `guarded_factory`'s factory whose clients also note
  each `CallFailed` a ``SendMessage`` raises, under the message's messageId, before ADK
  catches it;
* ``failures.plugin()`` is an ADK plugin (``Runner(..., plugins=[...])``): on each error event
  of a failed A2A request (its ``custom_metadata["a2a:request"]`` names the messageId), it sets
  the event's ``error_code`` (`error_code`: ``"<action>:<reason>"``, or the action alone)
  and adds the decision's fields under ``custom_metadata["a2a_client_errors"]``
  (`failure_metadata`), before the runner stores the event in the session and yields it.

::

    failures = FailedCalls()
    remote = RemoteA2aAgent(
        name="echo", agent_card=card_url, a2a_client_factory=failures.factory(config, Guard())
    )
    runner = InMemoryRunner(agent=remote, plugins=[failures.plugin()])

    async for event in runner.run_async(...):
        if event.error_code:
            failed = event.custom_metadata["a2a_client_errors"]
            failed["action"], failed["reason"], failed["message_id"], failed["maybe_processed"]

The events of a failure the Guard did not raise (ADK's own card read, a task that ended
failed) are left as ADK made them. google-adk is imported only by `FailedCalls.plugin`; the
mapping (`error_code`, `failure_metadata`, `request_message_id`) needs neither it nor a2a-sdk.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any, Final

from a2a_client_errors._failures import CallFailed, OutcomeUnknown
from a2a_client_errors._guard import Guard

__all__ = [
    "ADK_REQUEST_KEY",
    "METADATA_KEY",
    "FailedCalls",
    "error_code",
    "failure_metadata",
    "request_message_id",
]

METADATA_KEY: Final = "a2a_client_errors"
"""The ``custom_metadata`` key of an ADK event under which the decision's fields are put."""

ADK_REQUEST_KEY: Final = "a2a:request"
"""The ``custom_metadata`` key under which ``RemoteA2aAgent`` puts the A2A message it sent."""

PLUGIN_NAME: Final = "a2a_client_errors"


def error_code(failure: CallFailed) -> str:
    """The ``error_code`` of an ADK event for ``failure``: ``"<action>:<reason>"``.

    ``"reconcile:TASK_NOT_FOUND"``, ``"fix_request:INVALID_REQUEST"``; the action alone when the
    decision has no reason (``"retry"``: a 503 or a dropped connection names none; the error's
    ``kind`` and codes are in `failure_metadata`).
    """
    decision = failure.decision
    action = decision.action.value
    return action if decision.reason is None else f"{action}:{decision.reason}"


def failure_metadata(failure: CallFailed, message_id: str | None = None) -> dict[str, Any]:
    """The decision's fields, JSON-ready, for an event's ``custom_metadata[METADATA_KEY]``.

    Args:
        failure: what the Guard raised.
        message_id: the messageId of the message the call sent (an `OutcomeUnknown`'s own
            is taken first).

    Returns:
        ``failure`` (the exception's class name), ``action``, ``reason``, ``message_id``,
        ``maybe_processed``, ``attempts``, ``operation``, ``give_up``, ``retry_after``, and the
        error's ``kind``, ``http_status``, ``grpc_status``, ``jsonrpc_code`` (None without an
        error); an `OutcomeUnknown` adds ``context_id``, ``task_id`` and ``why``.
    """
    decision = failure.decision
    error = decision.error
    fields: dict[str, Any] = {
        "failure": type(failure).__name__,
        "action": decision.action.value,
        "reason": None if decision.reason is None else str(decision.reason),
        "message_id": message_id,
        "maybe_processed": failure.maybe_processed,
        "attempts": failure.attempts,
        "operation": decision.operation,
        "give_up": None if decision.give_up is None else decision.give_up.value,
        "retry_after": decision.retry_after,
        "kind": None if error is None else error.kind.value,
        "http_status": None if error is None else error.http_status,
        "grpc_status": None if error is None else error.grpc_status,
        "jsonrpc_code": None if error is None else error.jsonrpc_code,
    }
    if isinstance(failure, OutcomeUnknown):
        fields["message_id"] = failure.message_id or message_id
        fields["context_id"] = failure.context_id
        fields["task_id"] = failure.task_id
        fields["why"] = failure.why
    return fields


def request_message_id(custom_metadata: Mapping[str, Any] | None) -> str | None:
    """The messageId of the A2A message an ADK event's metadata names, if it names one.

    ``RemoteA2aAgent`` puts the message it sent under ``"a2a:request"``, as a dict of the
    message's JSON form (``messageId``, on either a2a-sdk line).
    """
    request = (custom_metadata or {}).get(ADK_REQUEST_KEY)
    if not isinstance(request, Mapping):
        return None
    found = request.get("messageId", request.get("message_id"))
    return found if isinstance(found, str) and found else None


class FailedCalls:
    """The failures of guarded A2A sends, by messageId, until ADK's error event takes them.

    Args:
        limit: the most failures kept (the oldest is dropped first): a failure whose event
            never comes (ADK yielded none) does not stay for ever.
    """

    def __init__(self, limit: int = 256) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._failures: OrderedDict[str, CallFailed] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """How many failures are kept, their events not seen yet."""
        return len(self._failures)

    def record(self, message_id: str, failure: CallFailed) -> None:
        """Keep ``failure`` for the message ``message_id``."""
        with self._lock:
            self._failures[message_id] = failure
            self._failures.move_to_end(message_id)
            while len(self._failures) > self.limit:
                self._failures.popitem(last=False)

    def pop(self, message_id: str) -> CallFailed | None:
        """The failure kept for ``message_id``, taken out (None: none is kept)."""
        with self._lock:
            return self._failures.pop(message_id, None)

    def mark(self, event: Any) -> bool:
        """Put the decision of the failure ``event`` reports on it: whether one was kept.

        ``event`` is an ADK ``Event`` (or anything with ``error_message``, ``error_code`` and
        ``custom_metadata``); only an error event whose metadata names a messageId is read.
        Its ``error_code`` becomes `error_code`'s, its metadata gets `METADATA_KEY`.
        """
        if not getattr(event, "error_message", None):
            return False
        metadata = getattr(event, "custom_metadata", None)
        message_id = request_message_id(metadata)
        failure = None if message_id is None else self.pop(message_id)
        if failure is None:
            return False
        event.error_code = error_code(failure)
        event.custom_metadata = {
            **(metadata or {}),
            METADATA_KEY: failure_metadata(failure, message_id),
        }
        return True

    def watch(self, client: Any) -> Any:
        """``client`` (a guarded a2a-sdk client), noting each `CallFailed` its sends raise."""
        return _Watched(client, self)

    def factory(self, config: Any = None, guard: Guard | None = None, **options: Any) -> Any:
        """`guarded_factory`'s ``ClientFactory``, each of its clients `watch`-ed.

        The arguments are `guarded_factory`'s (``options``: `guard_client`'s).

        Raises:
            ImportError: a2a-sdk is not installed.
        """
        from a2a_client_errors.integrations.a2a_sdk import guard_client  # noqa: PLC0415
        from a2a_client_errors.integrations.a2a_sdk._factory import (  # noqa: PLC0415
            wrapping_factory,
        )

        per_client = sorted({"peer", "card_url", "factory"} & options.keys())
        if per_client:
            raise TypeError(f"factory sets no {per_client}: each client has its own")
        every = guard or Guard()
        return wrapping_factory(
            config, lambda client: self.watch(guard_client(client, every, **options))
        )

    def plugin(self) -> Any:
        """An ADK plugin (a ``google.adk.plugins.BasePlugin``) that `mark`-s every event.

        Raises:
            ImportError: google-adk is not installed.
        """
        return _plugin_class()(self)


class _Watched:
    """A guarded client whose ``send_message`` notes the `CallFailed` it raises, then raises it.

    Everything else is the client's own.
    """

    def __init__(self, client: Any, failures: FailedCalls) -> None:
        self.client = client
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def send_message(self, request: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """The client's ``send_message``; a `CallFailed` is noted under the messageId first."""
        from a2a_client_errors.integrations.a2a_sdk._compat import line  # noqa: PLC0415

        message_id = getattr(line().message_of(request), "message_id", "")
        try:
            async with aclosing(self.client.send_message(request, *args, **kwargs)) as events:
                async for event in events:
                    yield event
        except CallFailed as failure:
            if message_id:
                self.failures.record(message_id, failure)
            raise


@functools.cache
def _plugin_class() -> type[Any]:
    """The ADK plugin class, made once google-adk is imported."""
    from google.adk.plugins.base_plugin import BasePlugin  # noqa: PLC0415

    class FailedCallsPlugin(BasePlugin):  # type: ignore[misc]
        """Puts the Guard's decision on ADK's error event of a failed A2A call."""

        def __init__(self, failures: FailedCalls) -> None:
            super().__init__(name=PLUGIN_NAME)
            self.failures = failures

        async def on_event_callback(self, *, invocation_context: Any, event: Any) -> Any:
            """Mark the event in place (the runner stores and yields it as it is)."""
            self.failures.mark(event)
            return None

    return FailedCallsPlugin
