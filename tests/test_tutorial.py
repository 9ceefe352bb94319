"""The tutorial runs as written: its blocks in order, in one session, against a real agent.

docs/tutorial.md starts from an agent's URL ("replace the URL with your agent's"); here the URL
is the one of an embedded a2a-sdk agent on 127.0.0.1, and every block runs against it.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import Reason
from a2a_client_errors.testing.peer import EmbeddedPeer

if TYPE_CHECKING:
    from collections.abc import Iterator

# The tutorial runs against the embedded peer (a2a-sdk 1.x).
pytestmark = [pytest.mark.e2e, pytest.mark.a2a_sdk("1")]

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
PLACEHOLDER = '"http://127.0.0.1:9999"'
"""The URL the tutorial tells its reader to replace (with its quotes: only that literal)."""


def _blocks(fence: str) -> list[str]:
    return re.findall(rf"```{fence}\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), re.DOTALL)


@pytest.fixture(name="logging_restored")
def _logging_restored() -> Iterator[None]:
    """The tutorial configures logging as a program would: undone after the test."""
    root, package = logging.getLogger(), logging.getLogger("a2a_client_errors")
    handlers, levels = list(root.handlers), (root.level, package.level)
    yield
    root.handlers[:] = handlers
    root.setLevel(levels[0])
    package.setLevel(levels[1])


@pytest.mark.usefixtures("logging_restored")
def test_the_tutorial_runs_against_a_real_agent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step does what the tutorial says, against the agent's URL, outside the repository."""
    monkeypatch.chdir(tmp_path)  # where a reader who installed the package stands
    blocks = _blocks("python")
    assert sum(block.count(PLACEHOLDER) for block in blocks) >= 1
    namespace: dict[str, Any] = {"__name__": "tutorial"}
    with EmbeddedPeer() as peer:
        url = f'"{peer.origin}"'
        for index, block in enumerate(blocks):
            code = compile(block.replace(PLACEHOLDER, url), f"{TUTORIAL}#{index}", "exec")
            exec(code, namespace)  # noqa: S102 (our own documentation)
        runs = peer.executions
    out = capsys.readouterr().out

    assert namespace["card"].name == peer.agent_card.name  # read from the URL
    assert namespace["decision"].reason is Reason.TASK_NOT_FOUND  # a2a-sdk's error, classified
    assert namespace["grpc_targets"] == [peer.grpc_target]
    assert "GetTask over gRPC: reconcile TASK_NOT_FOUND" in out
    assert "GetTask: reconcile TASK_NOT_FOUND" in out
    assert "failed fast, next probe in" in out  # the breaker opened on the agent that is down
    assert runs
    assert set(runs.values()) == {1}  # every message sent ran once
    registry = namespace["metrics"].registry
    labels = {"method": "SendMessage", "outcome": "ok", "give_up": "", "peer": "my-agent"}
    assert registry.get_sample_value("a2a_client_calls_total", labels) == 1
    errors = {"method": "GetTask", "reason": "TASK_NOT_FOUND", "action": "reconcile"}
    assert registry.get_sample_value("a2a_client_errors_total", {**errors, "peer": "my-agent"}) == 1


def test_the_agent_to_try_it_on_starts_and_prints_its_url(tmp_path: Path) -> None:
    """The command the tutorial gives for an agent to call prints a URL, and serves there.

    It runs outside the repository, the package on its path as an installed one would be.
    """
    (console,) = [block for block in _blocks("console") if "EmbeddedPeer" in block]
    command = shlex.split(console.splitlines()[0].removeprefix("$ "))
    assert command[:2] == ["python", "-c"]
    path = os.pathsep.join([str(TUTORIAL.parent.parent), os.environ.get("PYTHONPATH", "")])
    with (
        subprocess.Popen(  # noqa: S603 (the tutorial's own command, by this interpreter)
            [sys.executable, *command[1:]],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": path},
        ) as agent
    ):
        try:
            assert agent.stdout is not None
            origin = agent.stdout.readline().strip()
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+", origin), origin
            card = httpx.get(f"{origin}/.well-known/agent-card.json", timeout=10)
            assert card.json()["supportedInterfaces"]
        finally:
            agent.terminate()
            agent.wait(timeout=30)
