"""How an agent says, in its card, that it deduplicates resent messages; and how to read it.

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

* ``ttl`` (number, seconds, required): a resend within ``ttl`` seconds of the first send is
  answered with what the first send made, and never runs again;
* ``perCaller`` (boolean, default true): resends count only from the caller that sent first
  (the same user, or the same credentials); another caller's message with the same messageId
  is another message.

A client reads it with `read_dedupe_params`, from the a2a-sdk ``AgentCard`` (1.x protobuf, or
0.3 pydantic model) or from the card's JSON as served at ``/.well-known/agent-card.json`` (1.0
and 0.3 both list extensions under ``capabilities.extensions``). This module imports nothing
but the standard library: a client door reads a card without a2a-sdk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["DEDUPLICATE_EXTENSION", "DedupeParams", "read_dedupe_params"]

DEDUPLICATE_EXTENSION: Final = "urn:a2a-client-errors:ext:deduplicate:v1"
"""The URI of the extension (in a namespace of this project's own; ``v1`` changes only with
the meaning of its params)."""

_MAX_EXTENSIONS: Final = 256
"""Extensions of a card read at most: a hostile card cannot make the reader walk forever."""


@dataclass(frozen=True, slots=True)
class DedupeParams:
    """What an agent's card says about its deduplication (the extension's ``params``).

    Attributes:
        ttl: seconds after the first send during which a resend (same messageId) is answered
            with what the first send made.
        per_caller: whether a resend counts only from the caller that sent first.
    """

    ttl: float
    per_caller: bool = True

    def to_params(self) -> dict[str, Any]:
        """The extension's ``params``, as the card carries them."""
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
