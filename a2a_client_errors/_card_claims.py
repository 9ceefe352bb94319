"""What an agent card says the agent supports, and an internal error read against it.

Some agents answer an operation their card says they do not support with an internal error
(a2a-sdk 0.3: JSON-RPC -32603 for a push configuration, a stream or the extended card, and
a bare HTTP 500 on HTTP+JSON; protocol-notes §16), where A2A asks for
PUSH_NOTIFICATION_NOT_SUPPORTED or UNSUPPORTED_OPERATION (§3.3.4). Retrying such an answer
only repeats it. `read_against_card` reads it as the card's reason instead (source
``agent_card``), never by its message.

`read_card_claims` reads a card in either shape, as JSON (a dict, as served at
``/.well-known/agent-card.json``) or as an a2a-sdk ``AgentCard`` (1.x protobuf, 0.3 pydantic),
duck-typed: this module imports nothing but the standard library and the package's own
tables. A flag that is false or absent says "not supported" (§9 of the notes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from a2a_client_errors._errors import ErrorKind, Source
from a2a_client_errors._operations import params_of
from a2a_client_errors._reasons import Reason

if TYPE_CHECKING:
    from a2a_client_errors._errors import CallError

__all__ = [
    "CARD_PATHS",
    "CardClaims",
    "asks_for_push",
    "card_interfaces",
    "interface_key",
    "keys_of",
    "read_against_card",
    "read_card_claims",
    "unsupported_by_card",
]

CARD_PATHS: Final = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""Where an agent serves its card (1.0 and 0.3; ``agent.json``: 0.3's older place)."""

_MAX_INTERFACES: Final = 16
"""Interfaces of a card read at most: a hostile card cannot make the reader walk forever."""

_PUSH_OPERATIONS: Final = frozenset(
    {
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)
_SENDS: Final = frozenset({"SendMessage", "SendStreamingMessage"})
_STREAMS: Final = frozenset({"SendStreamingMessage", "SubscribeToTask"})
_PUSH_KEYS: Final = (
    "taskPushNotificationConfig",  # 1.0
    "pushNotificationConfig",  # 0.3 JSON-RPC
    "pushNotification",  # 0.3 HTTP+JSON
    "task_push_notification_config",
    "push_notification_config",
    "push_notification",
)
_INTERNAL_GRPC: Final = frozenset({"INTERNAL", "UNKNOWN"})
_NOT_OBJECTS: Final = (str, bytes, bytearray, list, tuple, int, float)
"""What a card, or its capabilities, cannot be (a pydantic model is iterable: that is no test)."""


@dataclass(frozen=True, slots=True)
class CardClaims:
    """What an agent card says the agent supports (False: it says not, or says nothing).

    Attributes:
        streaming: ``capabilities.streaming``: SendStreamingMessage and SubscribeToTask.
        push_notifications: ``capabilities.pushNotifications``: the push configuration
            operations, and sends that ask for push notifications.
        extended_card: ``capabilities.extendedAgentCard`` (1.0), or 0.3's top-level
            ``supportsAuthenticatedExtendedCard``: GetExtendedAgentCard.

    """

    streaming: bool = False
    push_notifications: bool = False
    extended_card: bool = False


def _field(value: object, *names: str) -> object:
    """The first of ``names`` that ``value`` holds (a mapping's key, else an attribute)."""
    for name in names:
        if isinstance(value, Mapping):
            # not .get(): a protobuf Struct is a Mapping without one
            found = value[name] if name in value else None  # noqa: SIM401
        else:
            found = getattr(value, name, None)
        if found is not None:
            return found
    return None


def read_card_claims(card: object) -> CardClaims | None:
    """What ``card`` says the agent supports, or None when it is no card (it has no capabilities).

    Never raises, whatever ``card`` is.

    Args:
        card: the card's JSON object (1.0 or 0.3 layout), or an a2a-sdk ``AgentCard``
            (1.x protobuf, 0.3 pydantic).

    Returns:
        The `CardClaims`; a flag counts only when it is exactly ``true``.
    """
    try:
        if isinstance(card, _NOT_OBJECTS):
            return None
        capabilities = _field(card, "capabilities")
        if capabilities is None or isinstance(capabilities, _NOT_OBJECTS):
            return None
        extended = _field(capabilities, "extendedAgentCard", "extended_agent_card")
        if extended is not True:  # 0.3 kept it at the top level
            extended = _field(
                card,
                "supportsAuthenticatedExtendedCard",
                "supports_authenticated_extended_card",
                "supportsExtendedAgentCard",
            )
        return CardClaims(
            streaming=_field(capabilities, "streaming") is True,
            push_notifications=_field(capabilities, "pushNotifications", "push_notifications")
            is True,
            extended_card=extended is True,
        )
    except Exception:  # an object that fights being read is no card
        return None


def card_interfaces(card: object) -> list[str]:
    """The URLs of the interfaces ``card`` lists, at most sixteen; never raises.

    1.0 ``supportedInterfaces``; 0.3 ``url`` and ``additionalInterfaces``; as JSON or as an
    a2a-sdk object.
    """
    try:
        urls = [_field(card, "url")]
        for names in (
            ("supportedInterfaces", "supported_interfaces"),
            ("additionalInterfaces", "additional_interfaces"),
        ):
            entries = _field(card, *names)
            if isinstance(entries, Iterable) and not isinstance(
                entries, (str, bytes, bytearray, Mapping)
            ):
                for index, entry in enumerate(entries):
                    if index >= _MAX_INTERFACES:
                        break
                    urls.append(_field(entry, "url"))
        return list(dict.fromkeys(u for u in urls if isinstance(u, str) and u))[:_MAX_INTERFACES]
    except Exception:  # an object that fights being read lists nothing
        return []


def _origin_and_path(url: str) -> tuple[str, str] | None:
    """``scheme://host:port`` (default port filled in) and the path without its trailing slash."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = parts.hostname
        if scheme not in ("http", "https") or not host:
            return None
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    return f"{scheme}://{host}:{port}", parts.path.rstrip("/")


def interface_key(url: str) -> str | None:
    """An interface's URL as the Guard keeps what its card says: ``scheme://host:port/path``.

    The default port filled in, the path without its trailing slash, no query or fragment;
    None when ``url`` is no ``http``/``https`` URL (a gRPC target, say).
    """
    split = _origin_and_path(url)
    return None if split is None else split[0] + split[1]


def keys_of(url: str) -> Iterator[str]:
    """The keys of the interfaces a request to ``url`` may go to, the longest first.

    The request's own path and each of its parents: an HTTP+JSON route lives under its
    interface's URL (``.../rest`` serves ``.../rest/v1/tasks/1``).
    """
    split = _origin_and_path(url)
    if split is None:
        return
    origin, path = split
    while True:
        yield origin + path
        if not path:
            return
        path = path.rpartition("/")[0]


def asks_for_push(body: object) -> bool:
    """Whether a send's JSON body (JSON-RPC, or HTTP+JSON) asks for push notifications.

    It does when its ``configuration`` carries a push notification config (1.0
    ``taskPushNotificationConfig``; 0.3 ``pushNotificationConfig``, ``pushNotification``).
    """
    params = params_of(body)
    configuration = None if params is None else params.get("configuration")
    if not isinstance(configuration, dict):
        return False
    return any(configuration.get(key) for key in _PUSH_KEYS)


def unsupported_by_card(
    claims: CardClaims, operation: str | None, *, asks_push: bool = False
) -> Reason | None:
    """The reason ``operation`` must fail with by what the card says (§3.3.4), or None.

    Args:
        claims: what the card says.
        operation: the A2A operation (1.0 name).
        asks_push: whether the call (a send) asks for push notifications.

    """
    if not claims.push_notifications and (
        operation in _PUSH_OPERATIONS or (asks_push and operation in _SENDS)
    ):
        return Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    if not claims.streaming and operation in _STREAMS:
        return Reason.UNSUPPORTED_OPERATION
    if not claims.extended_card and operation == "GetExtendedAgentCard":
        return Reason.UNSUPPORTED_OPERATION
    return None


def _internal(error: CallError) -> bool:
    """Whether ``error`` is an internal error that names nothing better.

    JSON-RPC -32603 (or the reason INTERNAL_ERROR), or no reason at all on HTTP 500 or gRPC
    INTERNAL/UNKNOWN.
    """
    if error.reason is None:
        return error.http_status == 500 or error.grpc_status in _INTERNAL_GRPC
    return error.reason is Reason.INTERNAL_ERROR


def read_against_card(
    error: CallError, claims: CardClaims | None, operation: str | None, *, asks_push: bool = False
) -> CallError:
    """``error`` read against the agent's card (``claims``; None: no card is known).

    An internal error answering an operation the card says is not supported is the card's
    reason (source ``agent_card``); anything else is ``error`` as it is. The wire, codes,
    message and delivery stay as they arrived: the card names the reason, not what reached
    the agent.
    """
    if claims is None or error.kind is ErrorKind.AUTH or not _internal(error):
        return error
    reason = unsupported_by_card(claims, operation, asks_push=asks_push)
    if reason is None:
        return error
    return replace(error, kind=ErrorKind.PROTOCOL, reason=reason, source=Source.AGENT_CARD)
