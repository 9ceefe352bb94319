"""JSON-RPC codes that another table gives another meaning, read by what the wire shows.

A2A 1.0 assigns -32001 to -32009; the draft of A2A 1.1 (the ``dev-1.1`` branch) adds -32010,
``TaskGenerationMismatchError``. crewai 1.15.30 (``crewai.a2a.errors``) has a table of its own
beyond -32009: -32010 is its ``UNSUPPORTED_EXTENSION`` ("Client does not support required
extensions") and -32013 its ``RATE_LIMIT_EXCEEDED``, whose ``data`` is ``{"retry_after": N}``
(seconds) when a delay is known. Neither of its errors carries an ``ErrorInfo``. (Servers that
answer with that module send them; crewai's own A2A server raises a2a-sdk 0.3's errors.) Two
readings follow, neither from the message:

* -32010 is draft 1.1's TASK_GENERATION_MISMATCH only where that error can answer: a send
  (SendMessage, SendStreamingMessage) whose ``configuration`` carried ``ifGenerationMatch``
  (the draft's only precondition). Elsewhere (a GetTask, a send without the precondition) a
  bare -32010 is crewai's: EXTENSION_SUPPORT_REQUIRED, the same decision as A2A's -32008. An
  ``ErrorInfo`` reason always decides first, as for any code.
* -32013 whose ``data`` is crewai's object with ``retry_after`` is RATE_LIMITED (retried), the
  delay honoured as a ``Retry-After`` header is. A bare -32013 names nothing (reported).

``data.retry_after`` is read as a hint on any JSON-RPC error that carries it: a finite number
of seconds, not negative; anything else there is ignored.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._errors import Source
from a2a_client_errors._operations import params_of
from a2a_client_errors._reasons import Reason

if TYPE_CHECKING:
    from collections.abc import Mapping

    from a2a_client_errors._errors import CallError

__all__ = [
    "GENERATION_CODE",
    "GENERATION_OPERATIONS",
    "RATE_LIMIT_CODE",
    "data_reason",
    "data_retry_after",
    "generation_precondition",
    "read_generation",
]

GENERATION_CODE: Final = -32010
"""Draft 1.1's TaskGenerationMismatchError; crewai 1.15's UNSUPPORTED_EXTENSION."""
RATE_LIMIT_CODE: Final = -32013
"""crewai 1.15's RATE_LIMIT_EXCEEDED (A2A assigns it nothing)."""
GENERATION_OPERATIONS: Final = frozenset({"SendMessage", "SendStreamingMessage"})
"""The operations whose request can carry draft 1.1's ``ifGenerationMatch``."""

_RETRY_AFTER: Final = "retry_after"
_PRECONDITION_KEYS: Final = ("ifGenerationMatch", "if_generation_match")
_SOURCE_CODE: Final = Source.JSONRPC_CODE
_MISMATCH: Final = Reason.TASK_GENERATION_MISMATCH


def data_retry_after(data: Mapping[str, Any]) -> float | None:
    """The seconds in crewai's ``data.retry_after``: a finite number, not negative; else None."""
    value = data.get(_RETRY_AFTER)
    if type(value) is int:
        if value < 0:
            return None
        try:
            return float(value)
        except OverflowError:  # past any float: ignored, as an infinite Retry-After is
            return None
    if type(value) is float and math.isfinite(value) and value >= 0:
        return value
    return None


def data_reason(code: int | None, data: Mapping[str, Any]) -> Reason | None:
    """The reason a JSON-RPC code names by the ``data`` object beside it (crewai's table)."""
    if code == RATE_LIMIT_CODE and _RETRY_AFTER in data:
        return Reason.RATE_LIMITED
    return None


def generation_precondition(body: object) -> bool:
    """Whether a send's JSON body (JSON-RPC or HTTP+JSON) carries ``ifGenerationMatch``."""
    params = params_of(body)
    configuration = None if params is None else params.get("configuration")
    if not isinstance(configuration, dict):
        return False
    return any(configuration.get(key) is not None for key in _PRECONDITION_KEYS)


def read_generation(
    error: CallError, operation: str | None, precondition: bool | None = None
) -> CallError:
    """``error`` with a bare -32010 read where draft 1.1's mismatch cannot answer (see above).

    Args:
        error: a normalised error.
        operation: the operation it answers (None: not known).
        precondition: whether the request carried ``ifGenerationMatch`` (None: not known, as
            when only the answer is at hand).

    Returns:
        ``error`` itself, unless it is TASK_GENERATION_MISMATCH read from the code -32010
        alone and answers an operation other than a send, or a send known to carry no
        precondition: then EXTENSION_SUPPORT_REQUIRED, its codes and delivery as they came.

    """
    if (
        error.reason is not _MISMATCH
        or error.source is not _SOURCE_CODE
        or error.jsonrpc_code != GENERATION_CODE
    ):
        return error
    if operation is None or (operation in GENERATION_OPERATIONS and precondition is not False):
        return error
    return replace(error, reason=Reason.EXTENSION_SUPPORT_REQUIRED)
