"""Push notifications on a peer without them: the task is polled instead.

The embedded a2a-sdk peer on 127.0.0.1 declares ``capabilities.pushNotifications = false``.
Two calls ask for push anyway:

* a SendMessage carrying a push configuration: the guarded client does not send it that way;
  the default decision handlers send the message without the configuration and poll its task
  with GetTask until it is final;
* a CreateTaskPushNotificationConfig for a running task: not sent either; the handlers give a
  ``Polling`` of the task instead of the configuration, and the caller iterates it for the
  task's changes, as the notifications would have told them.

Run it with ``python examples/push_to_polling.py``.
"""

from __future__ import annotations

import asyncio

import grpc.aio
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import Polling, guard_client
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.testing.peer import EmbeddedPeer

WEBHOOK = "https://orchestrator.example/a2a/push"


def _message(text: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)])
    return a2a_pb2.SendMessageRequest(message=message)


def _state(task: a2a_pb2.Task) -> str:
    return str(a2a_pb2.TaskState.Name(task.status.state))


async def ask_for_push(peer: EmbeddedPeer) -> None:
    """Ask a peer without push for push, twice; check both end in polling."""
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
    config = ClientConfig(
        streaming=False,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    recorder = RecordingHook()
    # Polls are spaced by the Guard's sleep; a real orchestrator keeps the default.
    guard = Guard(sleep=lambda _: asyncio.sleep(0.05), hooks=[recorder])
    client = guard_client(ClientFactory(config).create(peer.agent_card), guard)
    try:
        # 1. A message that asks for push notifications.
        request = _message("hello")
        request.configuration.task_push_notification_config.url = WEBHOOK
        events = [event async for event in client.send_message(request)]
        first = recorder.decisions[0].decision
        source = first.error.source.value if first.error else None
        print(f"SendMessage with push: {first.reason} ({source}) -> {first.action.value}")
        print(f"  events: {[_state(event.task) for event in events]}")
        assert (first.action.value, first.reason, source) == (
            "degrade",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            "agent_card",
        )
        assert _state(events[-1].task) == "TASK_STATE_COMPLETED"

        # 2. A push configuration for a task that is still working.
        slow = _message("slow")
        slow.configuration.return_immediately = True
        (answer,) = [event async for event in client.send_message(slow)]
        working = answer.task
        push = a2a_pb2.TaskPushNotificationConfig(task_id=working.id, url=WEBHOOK)
        polling = await client.create_task_push_notification_config(push)
        assert isinstance(polling, Polling)
        print(f"CreateTaskPushNotificationConfig: {polling!r}")
        seen = []
        async for task in polling:
            seen.append(_state(task))
            if task.status.state == a2a_pb2.TASK_STATE_WORKING:
                await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id))
        print(f"  the task's changes, polled: {seen}")
        assert seen == ["TASK_STATE_WORKING", "TASK_STATE_CANCELED"]
    finally:
        await client.close()
        await http.aclose()


def main() -> None:
    """Start a peer without push notifications, run both flows, stop the peer."""
    with EmbeddedPeer(push_notifications=False) as peer:
        asyncio.run(ask_for_push(peer))
    print("ok: push was asked of a peer without it; both calls ended in polling")


if __name__ == "__main__":
    main()
