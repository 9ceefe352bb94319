"""The wire models: tolerant of what peers send, typed for what users read."""

from __future__ import annotations

import math

import pydantic
import pytest

from a2a_client_errors import _wire as wire
from a2a_client_errors._wire import (
    BadRequest,
    DebugInfo,
    ErrorInfo,
    PreconditionFailure,
    RetryInfo,
    parse_duration,
)
from tests.conftest import A2A_DOMAIN, bad_request, debug_info, error_info, retry_info


def test_error_info_from_the_spec_example() -> None:
    """The §11.6 ErrorInfo parses into reason, domain and metadata."""
    info = ErrorInfo.model_validate(
        error_info("TASK_NOT_FOUND", metadata={"taskId": "task-123", "timestamp": "2025"})
    )
    assert info.reason == "TASK_NOT_FOUND"
    assert info.domain == A2A_DOMAIN
    assert info.metadata == {"taskId": "task-123", "timestamp": "2025"}


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"n": 1, "b": True, "f": 1.5}, {"n": "1", "b": "true", "f": "1.5"}),
        ({"nested": {"a": 1}, "list": [1], "none": None, "s": "x"}, {"s": "x"}),
        ("not a map", {}),
        ([["k", "v"]], {}),
        (None, {}),
    ],
    ids=["scalars", "containers-dropped", "string", "list", "null"],
)
def test_error_info_metadata_is_str_to_str(metadata: object, expected: dict[str, str]) -> None:
    """Metadata scalars become strings; containers, nulls and non-objects are dropped."""
    info = ErrorInfo.model_validate({"reason": "X", "domain": A2A_DOMAIN, "metadata": metadata})
    assert info.metadata == expected
    assert all(isinstance(v, str) for v in info.metadata.values())


@pytest.mark.parametrize(
    ("raw", "reason"),
    [({"reason": 7}, "7"), ({"reason": None}, ""), ({"reason": ["x"]}, ""), ({}, "")],
    ids=["int", "null", "list", "missing"],
)
def test_error_info_reason_of_wrong_type(raw: dict[str, object], reason: str) -> None:
    """A reason of the wrong type is coerced to text or left empty, never an error."""
    assert ErrorInfo.model_validate(raw).reason == reason


def test_models_ignore_unknown_fields_and_are_frozen() -> None:
    """Unknown fields are ignored, and a parsed detail cannot be changed."""
    info = ErrorInfo.model_validate({**error_info("X"), "extra": 1})
    assert not hasattr(info, "extra")
    with pytest.raises(pydantic.ValidationError):
        info.reason = "Y"


def test_bad_request_field_violations() -> None:
    """BadRequest reads ``fieldViolations`` (ProtoJSON) and skips entries that are not objects."""
    raw = bad_request(("pageSize", "must be <= 100"))
    raw["fieldViolations"].append("junk")
    parsed = BadRequest.model_validate(raw)
    assert [(v.field, v.description) for v in parsed.field_violations] == [
        ("pageSize", "must be <= 100")
    ]


def test_bad_request_with_wrong_type_is_empty() -> None:
    """A ``fieldViolations`` that is not an array gives no violations."""
    assert BadRequest.model_validate({"fieldViolations": "x"}).field_violations == ()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1.5s", 1.5),
        ("3s", 3.0),
        ("0s", 0.0),
        (" 2.25s ", 2.25),
        ({"seconds": 1, "nanos": 500_000_000}, 1.5),
        ({"seconds": "4"}, 4.0),
        (2, 2.0),
        (0.5, 0.5),
    ],
    ids=["1.5s", "3s", "0s", "spaces", "object", "string-seconds", "int", "float"],
)
def test_parse_duration(value: object, seconds: float) -> None:
    """ProtoJSON durations (string or object form) read as seconds."""
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [
        "-1s",
        "1.5",
        "abc",
        "",
        "1e400s",
        {"seconds": "x"},
        {"seconds": -5},
        None,
        True,
        [1],
        math.inf,
        10**400,
        {"seconds": 10**400},
    ],
    ids=[
        "negative",
        "no-unit",
        "text",
        "empty",
        "overflow",
        "bad-seconds",
        "negative-object",
        "null",
        "bool",
        "list",
        "inf",
        "integer-past-float",
        "integer-past-float-object",
    ],
)
def test_parse_duration_rejects_malformed(value: object) -> None:
    """Anything that is not a finite, non-negative duration gives None."""
    assert parse_duration(value) is None


def test_retry_info_reads_its_delay() -> None:
    """RetryInfo's ``retryDelay`` becomes seconds; a malformed one becomes None."""
    assert RetryInfo.model_validate(retry_info("1.5s")).retry_delay == 1.5
    assert RetryInfo.model_validate(retry_info("soon")).retry_delay is None


def test_debug_info_keeps_stack_entries_as_text() -> None:
    """DebugInfo keeps its stack entries as strings."""
    parsed = DebugInfo.model_validate(debug_info("boom"))
    assert parsed.stack_entries == ("frame 1",)
    assert parsed.detail == "boom"


def test_precondition_failure_violations() -> None:
    """PreconditionFailure reads its violations and drops non-objects."""
    parsed = PreconditionFailure.model_validate(
        {"violations": [{"type": "TOS", "subject": "x", "description": "d"}, 1]}
    )
    assert [(v.type, v.subject) for v in parsed.violations] == [("TOS", "x")]


def test_detail_types_cover_the_google_rpc_details() -> None:
    """Every modelled google.rpc detail is registered under its ``@type`` URL."""
    names = {
        "ErrorInfo",
        "BadRequest",
        "RetryInfo",
        "PreconditionFailure",
        "QuotaFailure",
        "ResourceInfo",
        "RequestInfo",
        "Help",
        "LocalizedMessage",
        "DebugInfo",
    }
    assert set(wire.DETAIL_TYPES) == {f"type.googleapis.com/google.rpc.{n}" for n in names}
    assert wire.DETAIL_TYPES["type.googleapis.com/google.rpc.ErrorInfo"] is ErrorInfo
