"""How an agent says, in its card and on its answers, that it deduplicates resent messages.

A2A lets an agent use the messageId to spot a resent SendMessage (§3.3.1: "MAY be idempotent;
agents may utilize the messageId to detect duplicate messages"), but gives it no way to say
that it does. An agent wrapped by ``a2a_client_errors.server.deduplicate`` says so with an
extension (§4.6) in its card, never required::

    "capabilities": {"extensions": [{
        "uri": "urn:a2a-client-errors:ext:deduplicate:v1",
        "description": "...",
        "required": false,
        "params": {"ttl": 86400, "perCaller": true}
    }]}

``params``:

* ``ttl`` (number, seconds, required): how long the agent keeps its word for one message. The
  agent keeps the message's record while its first attempt runs, however long that is (a
  running first attempt never expires), and then ``ttl`` seconds more from the moment that
  attempt ended: so at least ``ttl`` seconds after it received the first send, whatever the
  attempt's length. Every resend the agent receives by then is answered with what the first
  send made, and never runs again. A resend is the same message: the same messageId, taskId,
  contextId and parts; another message under a messageId already used is a new message.
  The client's rule that follows: **a resend sent at most ``ttl`` seconds after the first
  send is answered with the first send's task**, unless the resend takes longer to reach the
  agent than the first send took to be answered (a client that wants no such assumption
  resends at most ``ttl`` minus its request timeout after its first send). An agent that
  cannot keep another record does not drop one: it refuses the new message, before running
  anything, as *not processed* (HTTP 503 with ``Retry-After``, gRPC ``UNAVAILABLE`` with a
  ``RetryInfo``).
* ``perCaller`` (boolean, default true): resends count only from the caller that sent first
  (the same user, or the same credentials); another caller's message with the same messageId
  is another message.

A card may be stale (a cache, a hop that serves an older one), so the agent also marks every
answer it deduplicates: a Task or Message that SendMessage or SendStreamingMessage answers
carries, in its ``metadata`` and under the extension's URI (as A2A lets extensions do), the
same params::

    "metadata": {"urn:a2a-client-errors:ext:deduplicate:v1": {"ttl": 86400, "perCaller": true}}

The mark is put on the answer only (the task store keeps the task as the executor made it).

A client reads the card with `read_dedupe_params`, from the a2a-sdk ``AgentCard`` (1.x
protobuf, or 0.3 pydantic model) or from the card's JSON as served at
``/.well-known/agent-card.json`` (1.0 and 0.3 both list extensions under
``capabilities.extensions``), and an answer's mark with `read_dedupe_mark`. This module
imports nothing but the standard library: a client door reads a card without a2a-sdk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["DEDUPLICATE_EXTENSION", "DedupeParams", "read_dedupe_mark", "read_dedupe_params"]

DEDUPLICATE_EXTENSION: Final = "urn:a2a-client-errors:ext:deduplicate:v1"
"""The URI of the extension (in a namespace of this project's own; ``v1`` changes only with
the meaning of its params). It is also the key of the mark in an answer's ``metadata``."""

_MAX_EXTENSIONS: Final = 256
"""Extensions of a card read at most: a hostile card cannot make the reader walk forever."""
_MAX_DEPTH: Final = 4
"""Wrappers an answer is looked into at most (a JSON-RPC response, a result, a task)."""
_PAYLOADS: Final = ("result", "root", "task", "message")
"""Where an answer holds the Task or Message it carries: a JSON-RPC response's ``result``, a
pydantic root model's ``root``, a SendMessageResponse's or StreamResponse's ``task`` or
``message`` (JSON or protobuf)."""


@dataclass(frozen=True, slots=True)
class DedupeParams:
    """What an agent says about its deduplication (the extension's ``params``, or the mark).

    Attributes:
        ttl: seconds the agent keeps a message's record after its first attempt ended (and
            always while it runs): a resend sent within ``ttl`` seconds of the first send is
            answered with what the first send made (see the module docstring).
        per_caller: whether a resend counts only from the caller that sent first.
    """

    ttl: float
    per_caller: bool = True

    def to_params(self) -> dict[str, Any]:
        """The extension's ``params``, as the card (and the mark) carries them."""
        return {"ttl": self.ttl, "perCaller": self.per_caller}


def _field(value: object, name: str) -> object:
    """``value[name]`` of a mapping (JSON, protobuf ``Struct``), else its attribute, else None."""
    if isinstance(value, Mapping):
        # not .get(): a protobuf Struct is a Mapping without one
        return value[name] if name in value else None  # noqa: SIM401
    return getattr(value, name, None)


def _params(params: object) -> DedupeParams | None:
    """The params read, or None when ``ttl`` is missing or not a positive number."""
    ttl = _field(params, "ttl")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        return None
    if not math.isfinite(ttl) or ttl <= 0:
        return None
    per_caller = _field(params, "perCaller")
    if per_caller is None:
        per_caller = True
    if not isinstance(per_caller, bool):
        return None
    return DedupeParams(ttl=float(ttl), per_caller=per_caller)


def read_dedupe_params(card: object) -> DedupeParams | None:
    """The deduplication an agent card advertises (`DEDUPLICATE_EXTENSION`), or None.

    Never raises, whatever ``card`` is: anything that is not a card, a card without the
    extension, or an extension whose ``params`` lack a positive ``ttl`` (or carry a
    ``perCaller`` that is not a boolean) gives None. The first entry with the URI decides.

    Args:
        card: an a2a-sdk ``AgentCard`` (1.x protobuf, 0.3 pydantic), or the card's JSON
            object (a dict, 1.0 or 0.3 layout).

    Returns:
        The advertised `DedupeParams`, or None.
    """
    try:
        extensions = _field(_field(card, "capabilities"), "extensions")
        if not isinstance(extensions, Iterable) or isinstance(
            extensions, (str, bytes, bytearray, Mapping)
        ):
            return None
        for index, extension in enumerate(extensions):
            if index >= _MAX_EXTENSIONS:
                return None
            if _field(extension, "uri") == DEDUPLICATE_EXTENSION:
                return _params(_field(extension, "params"))
    except Exception:  # an object that fights being read is no card
        return None
    return None


def _mark(answer: object, depth: int) -> DedupeParams | None:
    """The mark in ``answer``'s metadata, else in the Task or Message it carries."""
    # a JSON dict, a 0.3 pydantic model's dict, or a protobuf Struct (a Mapping)
    mark = _field(_field(answer, "metadata"), DEDUPLICATE_EXTENSION)
    if mark is not None:
        return _params(mark)
    if depth >= _MAX_DEPTH:
        return None
    which = getattr(answer, "WhichOneof", None)
    if callable(which):  # a protobuf message: only the payload it holds (a read is cheap)
        try:
            name = which("payload")
        except ValueError:  # no payload to look into (a Task, a Message)
            return None
        return None if not isinstance(name, str) else _mark(getattr(answer, name), depth + 1)
    for name in _PAYLOADS:
        inner = _field(answer, name)
        if inner is None or inner is answer or isinstance(inner, (str, bytes, bytearray)):
            continue
        found = _mark(inner, depth + 1)
        if found is not None:
            return found
    return None


def read_dedupe_mark(answer: object) -> DedupeParams | None:
    """The deduplication an agent says it applied to this answer (its mark), or None.

    Never raises, whatever ``answer`` is. The mark is the `DEDUPLICATE_EXTENSION` entry of the
    ``metadata`` of the Task or Message answered, with a positive ``ttl`` (and a boolean
    ``perCaller``, when given), as in a card's ``params``.

    Args:
        answer: what SendMessage or SendStreamingMessage answered: a Task or Message (JSON
            dict, a2a-sdk 1.x protobuf, a2a-sdk 0.3 pydantic model), a JSON-RPC response or
            its ``result``, an HTTP+JSON body (``{"task": ...}``, ``{"message": ...}``), one
            event of a stream (a StreamResponse, JSON or protobuf), or a 1.x
            ``SendMessageResponse``.

    Returns:
        The marked `DedupeParams`, or None (no mark, or one that is not readable).
    """
    try:
        return _mark(answer, 0)
    except Exception:  # an object that fights being read carries no mark
        return None
