"""Task outcome hooks, and what instrumentation costs when it is not used: nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from a2a_client_errors import Guard, Hook, TaskOutcome
from a2a_client_errors.hooks import GuardEvent, TaskOutcomeEvent
from a2a_client_errors.instrumentation import LoggingHook
from a2a_client_errors.integrations import a2a_sdk
from a2a_client_errors.testing import RecordingHook
from tests.metrics_support import FAILED_TASK, workload

if TYPE_CHECKING:
    import pytest


class Tasks(Hook):
    """Keeps the task outcome events."""

    def __init__(self) -> None:
        self.events: list[TaskOutcomeEvent] = []

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """Keep one."""
        self.events.append(event)


class Broken(Hook):
    """Raises from every method."""

    def on_decision(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("decision")

    def on_retry(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("retry")

    def on_give_up(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("give_up")

    def on_budget_exhausted(self, event: GuardEvent) -> None:
        """Raise."""
        raise RuntimeError("budget")

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """Raise."""
        raise RuntimeError("task")


def _modules(code: str) -> list[str]:
    """The optional instrumentation libraries loaded after running ``code`` in a fresh Python."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        print(json.dumps(sorted(
            m for m in sys.modules if m.split(".")[0] in ("prometheus_client", "opentelemetry")
        )))
        """
    )
    done = subprocess.run(  # noqa: S603 (this interpreter, a fixed script)
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_importing_never_loads_the_optional_libraries() -> None:
    """The package, the instrumentation package and its hooks' classes load neither library."""
    assert (
        _modules(
            """
            import a2a_client_errors
            from a2a_client_errors import Guard
            from a2a_client_errors.instrumentation import (
                LoggingHook, OpenTelemetryHook, PrometheusHook
            )
            Guard(hooks=[LoggingHook()]).call(lambda: None)
            """
        )
        == []
    )


def test_each_library_loads_when_its_hook_is_created() -> None:
    """Creating a PrometheusHook loads prometheus_client only; an OpenTelemetryHook, the API."""
    loaded = _modules(
        """
        from prometheus_client import CollectorRegistry
        from a2a_client_errors.instrumentation import PrometheusHook
        PrometheusHook(registry=CollectorRegistry())
        """
    )
    assert "prometheus_client" in loaded
    assert not [m for m in loaded if m.startswith("opentelemetry")]
    loaded = _modules(
        """
        from a2a_client_errors.instrumentation import OpenTelemetryHook
        OpenTelemetryHook()
        """
    )
    assert "opentelemetry.metrics" in loaded
    assert not [m for m in loaded if m.startswith("prometheus_client")]


def test_hooks_that_skip_a_method_are_not_called_for_it() -> None:
    """A Guard calls only what its hooks override: a LoggingHook adds nothing to a success."""
    guard = Guard(hooks=[LoggingHook()])
    assert guard.observers["on_decision"] == ()
    assert guard.observers["on_call"] == ()
    assert guard.observers["on_task_outcome"] != ()
    assert not Guard().observers.any()


def test_record_task_tells_hooks_and_returns_the_outcome() -> None:
    """``record_task`` reads the task, tells the hooks with the skill and peer, returns it."""
    tasks = Tasks()
    guard = Guard(hooks=[tasks])
    outcome = guard.record_task(FAILED_TASK, skill="summarise", peer="billing", operation="GetTask")
    assert outcome is not None
    assert outcome.failed
    (event,) = tasks.events
    assert event == TaskOutcomeEvent(outcome, "billing", "GetTask", "summarise")
    assert guard.record_task(TaskOutcome("TASK_STATE_COMPLETED")) == TaskOutcome(
        "TASK_STATE_COMPLETED"
    )
    assert tasks.events[-1].peer == "default"
    assert tasks.events[-1].skill is None


def test_record_task_without_a_task_tells_nobody() -> None:
    """An answer with no task (a Message, an error, junk) gives None and no event."""
    tasks = Tasks()
    guard = Guard(hooks=[tasks])
    for answer in (None, "text", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001}}, 3):
        assert guard.record_task(answer) is None
    assert tasks.events == []
    assert Guard().record_task(FAILED_TASK) is not None  # no hook: still read


def test_hook_exceptions_never_change_the_outcome(caplog: pytest.LogCaptureFixture) -> None:
    """A hook raising from every method leaves every decision and result as they were."""
    plain = workload([])
    with caplog.at_level("ERROR", logger="a2a_client_errors"):
        broken = workload([Broken()])
    assert [(n, e.decision) for n, e in broken.events] == [(n, e.decision) for n, e in plain.events]
    failures = {r.getMessage() for r in caplog.records}
    assert {f"a2a_client_errors: hook {n} failed" for n in ("on_decision", "on_task_outcome")} <= (
        failures
    )


class _FakeClient:
    """Just enough of an a2a-sdk client for `GuardedClient._unary`."""

    _card = None

    async def get_task(self, request: Any, *, context: Any = None) -> dict[str, Any]:
        return {"id": request, "status": {"state": "TASK_STATE_FAILED"}}


async def test_the_guarded_client_reads_no_task_when_nobody_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a task outcome hook, the guarded client never reads a returned task's outcome."""
    reads: list[object] = []
    real = a2a_sdk.task_outcome

    def counting(answer: object) -> TaskOutcome | None:
        reads.append(answer)
        return real(answer)

    monkeypatch.setattr(a2a_sdk, "task_outcome", counting)
    quiet = a2a_sdk.GuardedClient(_FakeClient(), Guard(hooks=[RecordingHook()]), peer="p")
    await quiet.get_task("t-1")
    assert reads == []
    tasks = Tasks()
    told = a2a_sdk.GuardedClient(_FakeClient(), Guard(hooks=[tasks]), peer="p")
    await told.get_task("t-1")
    await told.get_task("t-1")  # the same final state again: told once
    assert len(reads) == 2
    assert [(e.outcome.state, e.operation, e.peer) for e in tasks.events] == [
        ("TASK_STATE_FAILED", "GetTask", "p")
    ]


async def test_the_guarded_client_forgets_old_tasks() -> None:
    """The memory of told tasks and skills is bounded; the oldest go first."""
    tasks = Tasks()
    client = a2a_sdk.GuardedClient(_FakeClient(), Guard(hooks=[tasks]), peer="p")
    for n in range(1030):
        client._tell(TaskOutcome("TASK_STATE_WORKING", task_id=f"t-{n}"), "SendMessage", "s")
    assert len(client._skills) == 1024
    assert "t-0" not in client._skills
    client._tell(TaskOutcome("TASK_STATE_COMPLETED", task_id="t-1029"), "GetTask")
    client._tell(TaskOutcome("TASK_STATE_COMPLETED"), "GetTask")  # no id: told, not remembered
    assert [(e.skill, e.outcome.task_id) for e in tasks.events] == [("s", "t-1029"), (None, None)]
