"""Pydantic models of the wire shapes: google.rpc error details and the error bodies.

Models here have no behaviour. They are tolerant: unknown fields are ignored, wrong scalar
types are coerced where it is safe (metadata values become strings) and otherwise the field
falls back to its default. The normaliser walks the raw JSON itself (that is the hot path) and
uses these models only for the typed details it hands to users; the server-side encoders use
them to write the same shapes.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Annotated, Any, Final, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "BadRequest",
    "DebugInfo",
    "Detail",
    "ErrorInfo",
    "FieldViolation",
    "Help",
    "HelpLink",
    "LocalizedMessage",
    "PreconditionFailure",
    "PreconditionViolation",
    "QuotaFailure",
    "QuotaViolation",
    "RequestInfo",
    "ResourceInfo",
    "RetryInfo",
    "UnknownDetail",
    "parse_detail",
    "parse_duration",
    "string_map",
]

_TYPE_PREFIX = "type.googleapis.com/google.rpc."
RETRY_INFO_TYPE = _TYPE_PREFIX + "RetryInfo"


MAX_TEXT: Final = 256
"""The longest a piece of peer text other than a message is kept (a reason, a metadata key or
value, a version, a task state or id), in characters: longer is cut, marked ``…``. Applied
where a `CallError` or a task outcome is built, so that no rendering of it (str, logs,
metrics, the CLI) is longer."""
MAX_ITEMS: Final = 64
"""The most metadata entries and supported versions an error keeps."""


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` within ``limit`` characters, the cut marked with ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: object) -> str:
    """Any JSON scalar as a string; containers and None as the empty string."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return ""


def string_map(value: object, limit: int = 64) -> dict[str, str]:
    """A JSON object as a str -> str map, of at most ``limit`` entries.

    Scalars are coerced to strings, containers and nulls dropped, keys and values cut to
    `MAX_TEXT`; anything but an object gives an empty map.
    """
    if not isinstance(value, dict):
        return {}
    if len(value) <= limit:
        for key, item in value.items():
            if type(item) is not str or len(item) > MAX_TEXT or len(key) > MAX_TEXT:
                break
        else:
            return dict(value)
    out: dict[str, str] = {}
    for key, item in value.items():
        if len(out) >= limit:
            break
        if isinstance(item, (dict, list)) or item is None:
            continue
        out[cut(str(key))] = cut(_text(item))
    return out


def _items(value: object) -> list[Any]:
    """A JSON array as a list of objects, anything else as an empty list."""
    if not isinstance(value, (list, tuple)):
        return []
    return [item for item in value if isinstance(item, (dict, BaseModel))]


def _strings(value: object) -> tuple[str, ...]:
    return tuple(_text(v) for v in value) if isinstance(value, (list, tuple)) else ()


def _metadata(value: object) -> dict[str, str]:
    """`string_map` at its default limit, for a validator: one parameter, the value.

    pydantic hands a validator with two positional parameters its ``ValidationInfo`` as the
    second (before 2.8 it did so whatever that parameter's default), which `string_map` would
    take for its limit.
    """
    return string_map(value)


Text = Annotated[str, BeforeValidator(_text)]
StringMap = Annotated[dict[str, str], BeforeValidator(_metadata)]

_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*s\s*$")


def parse_duration(value: object) -> float | None:
    """A ``google.protobuf.Duration`` in JSON (``"1.5s"``) or as ``{seconds, nanos}``, in seconds.

    Returns None for anything that is not a finite, non-negative duration.
    """
    seconds: float | None = None
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            seconds = float(match.group(1))
    elif isinstance(value, dict):
        secs, nanos = value.get("seconds", 0), value.get("nanos", 0)
        try:
            seconds = float(secs) + float(nanos) / 1e9
        except (TypeError, ValueError, OverflowError):
            seconds = None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an integer past any float: no duration
            seconds = None
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class ErrorInfo(_Wire):
    """``google.rpc.ErrorInfo``: the machine-readable reason of an error."""

    reason: Text = ""
    domain: Text = ""
    metadata: StringMap = Field(default_factory=dict)


class FieldViolation(_Wire):
    """One entry of ``google.rpc.BadRequest.field_violations``."""

    field: Text = ""
    description: Text = ""
    reason: Text = ""


class BadRequest(_Wire):
    """``google.rpc.BadRequest``: which fields of the request were wrong."""

    field_violations: Annotated[tuple[FieldViolation, ...], BeforeValidator(_items)] = Field(
        default=(), alias="fieldViolations"
    )


class RetryInfo(_Wire):
    """``google.rpc.RetryInfo``: how long to wait before retrying, in seconds."""

    retry_delay: Annotated[float | None, BeforeValidator(parse_duration)] = Field(
        default=None, alias="retryDelay"
    )


class PreconditionViolation(_Wire):
    """One entry of ``google.rpc.PreconditionFailure.violations``."""

    type: Text = ""
    subject: Text = ""
    description: Text = ""


class PreconditionFailure(_Wire):
    """``google.rpc.PreconditionFailure``."""

    violations: Annotated[tuple[PreconditionViolation, ...], BeforeValidator(_items)] = ()


class QuotaViolation(_Wire):
    """One entry of ``google.rpc.QuotaFailure.violations``."""

    subject: Text = ""
    description: Text = ""


class QuotaFailure(_Wire):
    """``google.rpc.QuotaFailure``."""

    violations: Annotated[tuple[QuotaViolation, ...], BeforeValidator(_items)] = ()


class ResourceInfo(_Wire):
    """``google.rpc.ResourceInfo``."""

    resource_type: Text = Field(default="", alias="resourceType")
    resource_name: Text = Field(default="", alias="resourceName")
    owner: Text = ""
    description: Text = ""


class RequestInfo(_Wire):
    """``google.rpc.RequestInfo``."""

    request_id: Text = Field(default="", alias="requestId")
    serving_data: Text = Field(default="", alias="servingData")


class HelpLink(_Wire):
    """One entry of ``google.rpc.Help.links``."""

    description: Text = ""
    url: Text = ""


class Help(_Wire):
    """``google.rpc.Help``."""

    links: Annotated[tuple[HelpLink, ...], BeforeValidator(_items)] = ()


class LocalizedMessage(_Wire):
    """``google.rpc.LocalizedMessage``."""

    locale: Text = ""
    message: Text = ""


class DebugInfo(_Wire):
    """``google.rpc.DebugInfo``. Kept, never rendered: it may hold a peer's stack trace."""

    stack_entries: Annotated[tuple[str, ...], BeforeValidator(_strings)] = Field(
        default=(), alias="stackEntries"
    )
    detail: Text = ""


class UnknownDetail(_Wire):
    """A detail of a type this package does not model, kept with its ``@type`` URL."""

    type_url: str = ""
    fields: dict[str, Any] = Field(default_factory=dict)


Detail = Union[  # noqa: UP007 (a runtime alias, read by pydantic and isinstance users alike)
    ErrorInfo,
    BadRequest,
    RetryInfo,
    PreconditionFailure,
    QuotaFailure,
    ResourceInfo,
    RequestInfo,
    Help,
    LocalizedMessage,
    DebugInfo,
    UnknownDetail,
]

DETAIL_TYPES: dict[str, type[_Wire]] = {
    _TYPE_PREFIX + model.__name__: model
    for model in (
        ErrorInfo,
        BadRequest,
        RetryInfo,
        PreconditionFailure,
        QuotaFailure,
        ResourceInfo,
        RequestInfo,
        Help,
        LocalizedMessage,
        DebugInfo,
    )
}
"""``@type`` URL -> model, for the google.rpc detail types."""


def _shallow(raw: Mapping[str, Any], limit: int, max_text: int) -> dict[str, Any]:
    """The scalar fields of an unknown detail (nested values dropped, text capped)."""
    out: dict[str, Any] = {}
    for key, value in list(raw.items())[: limit + 1]:
        if key == "@type":
            continue
        if isinstance(value, str):
            out[str(key)] = value[:max_text]
        elif isinstance(value, bool | int | float) or value is None:
            out[str(key)] = value
    return out


def parse_detail(raw: Mapping[str, Any], *, limit: int = 64, max_text: int = 4096) -> Detail:
    """One ``google.protobuf.Any`` of a details array, in ProtoJSON, as a typed detail.

    Known google.rpc types become their model; anything else (or a known type too broken to
    read) becomes an `UnknownDetail` that keeps the ``@type`` and the scalar fields. An
    ErrorInfo that forgot its ``@type`` is read as one when it names the A2A domain.
    """
    type_url = raw.get("@type")
    if not isinstance(type_url, str):
        if raw.get("domain") == "a2a-protocol.org" and isinstance(raw.get("reason"), str):
            type_url = _TYPE_PREFIX + "ErrorInfo"
        else:
            return UnknownDetail(type_url="", fields=_shallow(raw, limit, max_text))
    model = DETAIL_TYPES.get(type_url)
    if model is not None:
        try:
            return model.model_validate(raw)  # type: ignore[return-value]
        except (ValidationError, ValueError, TypeError, RecursionError):
            pass
    return UnknownDetail(type_url=type_url, fields=_shallow(raw, limit, max_text))
