"""An orchestrator's own decision handlers, with a hook that records every decision.

The orchestrator keeps local handles on the tasks it delegated. It subclasses
`DecisionHandlers`:

* ``task_gone`` drops the local handle when the peer knows no such task (TASK_NOT_FOUND); the
  default then raises `ReconcileNeeded`, since re-creating the task is the orchestrator's call;
* ``degrade`` logs the capability the peer lacks, and for GetExtendedAgentCard returns the
  public card the client already holds.

A `RecordingHook` on the Guard sees each decision. Both calls go to an embedded a2a-sdk peer on
127.0.0.1 whose card declares an extended card that is not configured.

Run it with ``python examples/orchestrator_handlers.py``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import Guard, ReconcileNeeded
from a2a_client_errors.integrations.a2a_sdk import DecisionHandlers, Situation, guard_client
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.testing.peer import EmbeddedPeer

log = logging.getLogger("orchestrator")


class Orchestrator(DecisionHandlers):
    """Keeps a handle per delegated task; decides about stale handles and missing features."""

    def __init__(self) -> None:
        super().__init__()
        self.handles: dict[str, str] = {}
        self.dropped: list[str] = []
        self.degraded: list[str] = []

    async def task_gone(self, situation: Situation) -> None:
        """The peer knows no such task: forget it locally."""
        task_id = str(situation.request.id)
        self.handles.pop(task_id, None)
        self.dropped.append(task_id)
        print(f"  task_gone: dropped the local handle of {task_id}")

    async def degrade(self, situation: Situation) -> Any:
        """Log what the peer lacks; for the extended card, fall back to the public one."""
        log.warning("peer lacks %s (%s)", situation.operation, situation.reason)
        self.degraded.append(f"{situation.operation}: {situation.reason}")
        # The default returns the public card the client holds for GetExtendedAgentCard, and
        # raises for what it has no fallback for.
        return await super().degrade(situation)


async def orchestrate(peer: EmbeddedPeer) -> None:
    """Read an unknown task and the extended card through the orchestrator's handlers."""
    orchestrator = Orchestrator()
    orchestrator.handles["task-from-yesterday"] = "summarise the report"
    recorder = RecordingHook()
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
    config = ClientConfig(
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    guard = Guard(sleep=lambda _: None, hooks=[recorder])
    client = guard_client(
        ClientFactory(config).create(peer.agent_card), guard, handlers=orchestrator
    )
    try:
        print("GetTask task-from-yesterday:")
        try:
            await client.get_task(a2a_pb2.GetTaskRequest(id="task-from-yesterday"))
        except ReconcileNeeded as failed:
            print(f"  raised ReconcileNeeded ({failed.reason}): re-creating is our call")
        else:
            raise AssertionError("GetTask of an unknown task succeeded")
        print("GetExtendedAgentCard:")
        card = await client.get_extended_agent_card()
        print(f"  got the public card of {card.name!r}")
    finally:
        await client.close()
        await http.aclose()

    print("the hook recorded:")
    for event in recorder.decisions:
        decision = event.decision
        print(f"  {event.operation}: {decision.action.value} ({decision.reason})")
    assert orchestrator.dropped == ["task-from-yesterday"]
    assert "task-from-yesterday" not in orchestrator.handles
    assert orchestrator.degraded == ["GetExtendedAgentCard: EXTENDED_AGENT_CARD_NOT_CONFIGURED"]
    assert card.name == peer.agent_card.name
    assert [(e.operation, e.decision.action.value) for e in recorder.decisions] == [
        ("GetTask", "reconcile"),
        ("GetExtendedAgentCard", "degrade"),
    ]


def main() -> None:
    """Start a peer, run the orchestrator, stop the peer."""
    logging.basicConfig(
        stream=sys.stdout, level=logging.WARNING, format="  log: %(name)s %(message)s"
    )
    with EmbeddedPeer() as peer:
        asyncio.run(orchestrate(peer))
    print("ok: the handle was dropped and the public card stood in for the extended one")


if __name__ == "__main__":
    main()
