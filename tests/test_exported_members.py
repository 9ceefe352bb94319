"""The public surface: ``__all__`` keeps the names the design card fixes, and they all exist."""

from __future__ import annotations

import enum
import importlib

import pytest

import a2a_client_errors
from tests.test_layout import NAMESPACES

# The names the design card keeps for the core (design.md, "Public names"); the Guard and
# server names join ``__all__`` with their modules.
CORE_NAMES = {
    "classify",
    "normalize",
    "Decision",
    "Action",
    "Reason",
    "CallError",
    "Policy",
    "CallFailed",
}


# The top level, exactly: what a user types (at most 40 names). Everything else sits in the
# namespaces (types, hooks, server, integrations, instrumentation, testing, probe).
TOP_LEVEL = {
    "A2AError",
    "Action",
    "AsyncGuardTransport",
    "AuthFailed",
    "BudgetExhausted",
    "BudgetRegistry",
    "CallError",
    "CallFailed",
    "CallRecord",
    "CircuitBreaker",
    "DeadlineExceeded",
    "Decision",
    "DegradeNeeded",
    "Delivery",
    "ExactlyOnce",
    "FixRequestNeeded",
    "GiveUp",
    "Guard",
    "GuardTransport",
    "Hook",
    "OutcomeUnknown",
    "PeerUnavailable",
    "Policy",
    "Reason",
    "ReconcileNeeded",
    "ReportNeeded",
    "RetryAfterTooLong",
    "RetryBudget",
    "RetryExhausted",
    "TaskOutcome",
    "aiter_events",
    "classify",
    "iter_events",
    "normalize",
    "recording",
    "task_outcome",
    "to_grpc",
    "to_http",
    "to_jsonrpc",
}


def test_the_top_level_is_exactly_what_a_user_types() -> None:
    """``__all__`` is this exact list, at most 40 names; nothing else public is bound there."""
    assert set(a2a_client_errors.__all__) == TOP_LEVEL
    assert len(a2a_client_errors.__all__) <= 40
    bound = {
        name
        for name in vars(a2a_client_errors)
        if not name.startswith("_") and name not in {"annotations"}
    }
    assert bound - TOP_LEVEL <= {*NAMESPACES, "cli", "demo"}


@pytest.mark.parametrize(
    ("namespace", "names"),
    [
        ("types", {"ErrorKind", "Source", "CallShape", "GuardedCall", "AttemptOutcome", "Limits"}),
        (  # what the docs show users: error details, the reasons table, the dedupe readers
            "types",
            {"ErrorInfo", "BadRequest", "FieldViolation", "ROWS", "row_for", "canonical_reason"}
            | {"DedupeParams", "read_dedupe_params", "read_dedupe_mark"},
        ),
        ("hooks", {"Hook", "CallRecord", "GuardEvent", "BreakerTransition", "BudgetFallback"}),
        pytest.param(
            "server",
            {"deduplicate", "with_a2a_errors", "A2AErrorMiddleware", "exception_handlers"}
            | {"A2AErrorInterceptor", "RedisDedupeStore"},
            marks=pytest.mark.a2a_sdk("1"),  # the server side imports a2a-sdk 1.x types
        ),
        ("instrumentation", {"LoggingHook", "PrometheusHook", "OpenTelemetryHook"}),
        (
            "journal",
            {"SqliteJournal", "message_id_for", "Journal", "JournalRecord", "State", "Recovery"},
        ),
        ("testing", {"RecordingHook", "FakeClock", "set_testing"}),
        (
            "integrations.redis",
            {"RedisRetryBudget", "RedisCircuitBreaker", "RedisJournal"},
        ),
        ("integrations.postgres", {"PostgresJournal"}),
        ("integrations.a2a_sdk", {"guard_client", "guarded_factory", "DecisionHandlers"}),
        ("integrations.adk", {"FailedCalls", "error_code", "failure_metadata"}),
    ],
)
def test_the_namespaces_hold_the_rest(namespace: str, names: set[str]) -> None:
    """What left the top level is importable from its namespace."""
    module = importlib.import_module(f"a2a_client_errors.{namespace}")
    assert names <= set(module.__all__) | set(dir(module))
    for name in names:
        assert getattr(module, name) is not None


def test_all_keeps_the_design_card_names() -> None:
    """Every core public name of the design card is exported in ``__all__``."""
    assert set(a2a_client_errors.__all__) >= CORE_NAMES


def test_every_name_in_all_exists() -> None:
    """Every name in ``__all__`` is an attribute of the package."""
    missing = [name for name in a2a_client_errors.__all__ if not hasattr(a2a_client_errors, name)]
    assert missing == []


def test_all_has_no_duplicates_and_no_private_names() -> None:
    """``__all__`` lists each name once and no private name (``__version__`` aside)."""
    names = a2a_client_errors.__all__
    assert len(names) == len(set(names))
    assert [n for n in names if n.startswith("_") and n != "__version__"] == []


def test_star_import_gives_exactly_all() -> None:
    """``from a2a_client_errors import *`` binds exactly the names in ``__all__``."""
    namespace: dict[str, object] = {}
    exec("from a2a_client_errors import *", namespace)  # noqa: S102 (a fixed, local statement)
    namespace.pop("__builtins__", None)
    assert set(namespace) == set(a2a_client_errors.__all__)


def test_public_kinds() -> None:
    """The functions are callable, Action and Reason are str enums, CallFailed is an exception."""
    assert callable(a2a_client_errors.classify)
    assert callable(a2a_client_errors.normalize)
    for enum_type in (a2a_client_errors.Action, a2a_client_errors.Reason):
        assert issubclass(enum_type, str)
        assert issubclass(enum_type, enum.Enum)
    assert issubclass(a2a_client_errors.CallFailed, Exception)


def test_version_is_a_string() -> None:
    """The package exposes its version as a string."""
    assert isinstance(a2a_client_errors.__version__, str)
    assert a2a_client_errors.__version__
