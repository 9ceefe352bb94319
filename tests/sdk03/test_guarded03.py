"""The a2a-sdk door on the 0.3 line: `guard_client` around a 0.3 client, end to end.

Against the real a2a-sdk 0.3 agent of ``tests/agent03.py`` on 127.0.0.1, over JSON-RPC,
HTTP+JSON and gRPC: the decisions, the handlers and the exactly-once promise with a client
whose agent has no ListTasks (A2A 0.3).
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    Message,
    MessageSendConfiguration,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
)

from a2a_client_errors import (
    FixRequestNeeded,
    Guard,
    OutcomeUnknown,
    Reason,
    ReconcileNeeded,
)
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guard_client
from a2a_client_errors.integrations.a2a_sdk._handlers import LOST_RACE
from a2a_client_errors.testing.lossy import LossyProxy, Seen
from tests.agent03 import Unavailable
from tests.sdk03.client03 import BINDINGS, client03, message

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from tests.agent03 import Running03

pytestmark = pytest.mark.a2a_sdk("0.3")

HTTP_BINDINGS = ["jsonrpc", "rest"]


@contextlib.asynccontextmanager
async def guarded03(
    running: Running03,
    binding: str,
    *,
    streaming: bool = False,
    card: AgentCard | None = None,
    guard: Guard | None = None,
    raw: bool = False,
) -> AsyncIterator[GuardedClient]:
    """A guarded 0.3 client on one binding (`client03`'s), closed after."""
    async with client03(running, binding, streaming=streaming, card=card) as client:
        handlers: Any = {"handlers": None} if raw else {}
        guarded = guard_client(client, guard or Guard(sleep=lambda _: None), **handlers)
        try:
            yield guarded
        finally:
            await guarded.close()  # and the clients built for other interfaces


async def last_of(events: AsyncIterator[Any]) -> Any:
    """The last thing a send yields: its task (from a ``(task, update)`` pair) or Message."""
    last: Any = None
    async for event in events:
        last = event
    return last[0] if isinstance(last, tuple) else last


def via(card: AgentCard, proxy: LossyProxy) -> AgentCard:
    """A copy of ``card`` whose HTTP interfaces go through ``proxy``."""
    base = httpx.URL(card.url)
    rebased = httpx.URL(proxy.url).copy_with(path=base.path)
    return card.model_copy(update={"url": str(rebased), "additional_interfaces": None})


def rest_card(card: AgentCard) -> AgentCard:
    """A copy of a proxied card whose one interface is HTTP+JSON at the same origin."""
    url = httpx.URL(card.url).copy_with(path="/rest")
    return card.model_copy(update={"url": str(url), "preferred_transport": "HTTP+JSON"})


# --- calls, decisions and handlers --------------------------------------------------------


@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_send_completes_once_on_every_binding(
    agent03: Running03, binding: str, streaming: bool
) -> None:
    """A send answers with its completed task (streamed or not), executed once."""
    async with guarded03(agent03, binding, streaming=streaming) as client:
        task = await last_of(client.send_message(message("complete", message_id="m-1")))
        read = await client.get_task(TaskQueryParams(id=task.id))
    assert isinstance(task, Task)
    assert task.status.state is TaskState.completed
    assert read.status.state is TaskState.completed
    assert agent03.executor.executions == {"m-1": 1}


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_an_unknown_task_is_reconcile(agent03: Running03, binding: str) -> None:
    """GetTask of a task the agent does not know: TASK_NOT_FOUND, reconcile, not retried."""
    async with guarded03(agent03, binding) as client:
        with pytest.raises(ReconcileNeeded) as raised:
            await client.get_task(TaskQueryParams(id="no-such-task"))
    assert raised.value.reason == Reason.TASK_NOT_FOUND
    assert raised.value.attempts == 1


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_a_cancel_that_lost_the_race_returns_the_ended_task(
    agent03: Running03, binding: str
) -> None:
    """Cancelling a completed task: the task comes back, marked as a lost race.

    Over JSON-RPC and HTTP+JSON the agent says TASK_NOT_CANCELABLE (-32002); over gRPC,
    a2a-sdk 0.3's server says only UNIMPLEMENTED (its reason is in its message, which is
    never read): the task read afterwards has ended, which is what a lost race returns.
    """
    async with guarded03(agent03, binding) as client:
        task = await last_of(client.send_message(message("complete")))
        canceled = await client.cancel_task(TaskIdParams(id=task.id))
    assert canceled.status.state is TaskState.completed
    assert canceled.metadata == LOST_RACE


@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize(("text", "state"), [("fail", "failed"), ("reject", "rejected")])
async def test_a_failed_task_is_a_result_never_resent(
    agent03: Running03, binding: str, text: str, state: str
) -> None:
    """A task that ends FAILED or REJECTED comes back in a successful call: a result."""
    async with guarded03(agent03, binding) as client:
        task = await last_of(client.send_message(message(text, message_id="m-f")))
    assert task.status.state.value == state
    assert agent03.executor.executions == {"m-f": 1}


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_a_streaming_client_sends_unary_to_an_agent_that_does_not_stream(
    start_agent03: Callable[..., Running03], binding: str
) -> None:
    """A streaming client, an agent whose card says it does not stream: the send goes unary.

    Nothing is refused, and the task completes with one execution.
    """
    running = start_agent03(streaming=False)
    async with guarded03(running, binding, streaming=True) as client:
        task = await last_of(client.send_message(message("complete", message_id="m-s")))
    assert task.status.state is TaskState.completed
    assert running.executor.executions == {"m-s": 1}


async def test_a_resubscription_the_card_refuses_reads_the_task(agent03: Running03) -> None:
    """Resubscribing where the card declares no streaming reads the task instead.

    Refused from the card (nothing sent), degrade: the task read by GetTask is the stream's
    one event.
    """
    card = agent03.card.model_copy(deep=True)
    card.capabilities.streaming = False
    async with guarded03(agent03, "jsonrpc", card=card) as client:
        task = await last_of(client.send_message(message("complete")))
        events = [event async for event in client.resubscribe(TaskIdParams(id=task.id))]
    assert len(events) == 1
    assert events[0][0].id == task.id
    assert events[0][0].status.state is TaskState.completed


async def test_a_push_configuration_the_card_refuses_is_not_sent(agent03: Running03) -> None:
    """``set_task_callback`` where the card declares no push gives a Polling of the task.

    Nothing is sent (a 0.3 agent would answer -32603 or -32003).
    """
    from a2a.types import PushNotificationConfig, TaskPushNotificationConfig

    async with guarded03(agent03, "jsonrpc") as client:
        task = await last_of(client.send_message(message("complete")))
        polling = await client.set_task_callback(
            TaskPushNotificationConfig(
                task_id=task.id, push_notification_config=PushNotificationConfig(url="http://x")
            )
        )
        reads = [read async for read in polling]
    assert polling.decision.reason == Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert reads[-1].status.state is TaskState.completed


def version_refused(app: Any) -> Any:
    """An agent that serves A2A 1.0 only: -32009 with its ErrorInfo, on HTTP 200.

    As an a2a-sdk 1.x server without 0.3 compatibility answers a 0.3 client (which sends no
    ``A2A-Version``).
    """

    async def refuse(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "error": {
                    "code": -32009,
                    "message": "A2A version 0.3 is not supported",
                    "data": [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "VERSION_NOT_SUPPORTED",
                            "domain": "a2a-protocol.org",
                            "metadata": {"supportedVersions": "1.0"},
                        }
                    ],
                },
            }
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return refuse


async def test_a_refused_version_is_fix_request_and_not_resent(
    start_agent03: Callable[..., Running03],
) -> None:
    """VERSION_NOT_SUPPORTED is fix_request, raised once and never resent.

    A 0.3 client sends no version per call, so the fix cannot be made.
    """
    running = start_agent03(wrap_app=version_refused)
    async with guarded03(running, "jsonrpc") as client:
        with pytest.raises(FixRequestNeeded) as raised:
            await last_of(client.send_message(message("complete")))
    assert raised.value.reason == Reason.VERSION_NOT_SUPPORTED
    assert raised.value.attempts == 1
    assert running.executor.total == 0


# --- exactly once ----------------------------------------------------------------------------


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_503_is_retried_with_one_execution(
    start_agent03: Callable[..., Running03], binding: str, streaming: bool
) -> None:
    """A send answered 503 with ``Retry-After`` is resent, and executed once.

    The hint makes it the server's own refusal (not processed), given before the agent saw
    the send.
    """
    wrappers: list[Unavailable] = []

    def unavailable(app: Any) -> Unavailable:
        wrappers.append(Unavailable(app, 1, retry_after="0"))
        return wrappers[0]

    running = start_agent03(wrap_app=unavailable)
    async with guarded03(running, binding, streaming=streaming) as client:
        task = await last_of(client.send_message(message("complete", message_id="m-503")))
    assert task.status.state is TaskState.completed
    assert wrappers[0].refused == 1
    assert running.executor.executions == {"m-503": 1}


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_bare_503_to_a_send_is_outcome_unknown(
    start_agent03: Callable[..., Running03], binding: str
) -> None:
    """A bare 503 to a send is OutcomeUnknown, and nothing is resent.

    With no hint and no error body of the agent's, it may come from a hop that forwarded
    the send; A2A 0.3 has no ListTasks to prove nothing was made.
    """
    wrappers: list[Unavailable] = []

    def unavailable(app: Any) -> Unavailable:
        wrappers.append(Unavailable(app, 1))
        return wrappers[0]

    running = start_agent03(wrap_app=unavailable)
    async with guarded03(running, binding) as client:
        with pytest.raises(OutcomeUnknown):
            await last_of(client.send_message(message("complete", message_id="m-bare")))
    assert wrappers[0].refused == 1
    assert running.executor.total == 0  # nothing was resent


def lose_first(kind: Callable[[Seen], bool]) -> Callable[[Seen], str]:
    """A proxy plan that loses the answer to the first request ``kind`` picks."""
    left = [1]

    def plan(seen: Seen) -> str:
        if kind(seen) and left[0]:
            left[0] = 0
            return "lose"
        return "forward"

    return plan


def is_get(seen: Seen) -> bool:
    """A GetTask (JSON-RPC ``tasks/get``, or HTTP+JSON ``GET /v1/tasks/{id}``)."""
    return seen.rpc_method == "tasks/get" or (seen.method == "GET" and "/tasks/" in seen.path)


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_lost_first_answer_is_outcome_unknown_never_a_duplicate(
    agent03: Running03, binding: str, streaming: bool
) -> None:
    """A send's answer lost after the agent made the task is OutcomeUnknown: one task.

    A2A 0.3 has no ListTasks, so nothing can prove the task absent; nothing is resent.
    """
    with LossyProxy(agent03.http_target, lose_first(lambda seen: seen.is_send)) as proxy:
        card = via(agent03.card, proxy)
        if binding == "rest":
            card = rest_card(card)
        async with guarded03(agent03, binding, streaming=streaming, card=card) as client:
            with pytest.raises(OutcomeUnknown) as raised:
                await last_of(client.send_message(message("complete", message_id="m-lost")))
    assert raised.value.sent is not None
    assert raised.value.sent.message_id == "m-lost"
    # A unary send is answered in full before its answer is lost: its task exists. A stream
    # is lost once it starts: the agent may not have run yet when the connection closes.
    made = 1 if not streaming else agent03.executor.executions["m-lost"]
    assert agent03.executor.executions["m-lost"] == made <= 1
    assert agent03.executor.total == made  # nothing resent
    assert agent03.task_count <= made


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_blocking_send_goes_without_blocking_and_recovers_a_lost_read(
    agent03: Running03, binding: str
) -> None:
    """A blocking unary send goes without blocking, and a lost read of its task is read again.

    A lost answer to a blocking send could not be looked up, so it goes with ``blocking:
    false`` and its task is read until it settles; a read is safe to repeat. The caller gets
    the completed task; one execution.
    """
    blocking: list[bool] = []
    lost: list[Seen] = []

    def plan(seen: Seen) -> str:
        if seen.is_send:
            body = json.loads(seen.body)
            configuration = body.get("params", body).get("configuration") or {}
            # ProtoJSON (HTTP+JSON) leaves a false boolean out; JSON-RPC writes it.
            blocking.append(configuration.get("blocking", binding == "jsonrpc"))
        elif is_get(seen) and not lost:
            lost.append(seen)
            agent03.executor.release.set()  # the task completes once a read was lost
            return "lose"
        return "forward"

    with LossyProxy(agent03.http_target, plan) as proxy:
        card = via(agent03.card, proxy)
        if binding == "rest":
            card = rest_card(card)
        async with guarded03(agent03, binding, card=card) as client:
            task = await last_of(client.send_message(message("hold", message_id="m-poll")))
    assert task.status.state is TaskState.completed
    assert blocking == [False]
    assert len(lost) == 1
    assert agent03.executor.executions == {"m-poll": 1}


async def test_the_caller_s_configuration_and_message_are_not_changed(agent03: Running03) -> None:
    """The non-blocking send is made on copies: the caller's message and configuration stay."""
    sent = message("complete")
    before = sent.model_dump()
    configuration = MessageSendConfiguration(accepted_output_modes=["text/plain"])
    async with guarded03(agent03, "jsonrpc") as client:
        await last_of(client.send_message(sent, configuration=configuration))
    assert sent.model_dump() == before
    assert configuration.model_fields_set == {"accepted_output_modes"}


async def test_a_message_answer_is_passed_on(agent03: Running03) -> None:
    """An agent that answers with a Message: the Message, as the client yields it."""
    async with guarded03(agent03, "jsonrpc") as client:
        answer = await last_of(client.send_message(message("message")))
    assert isinstance(answer, Message)


async def test_the_card_is_read_as_0_3_writes_it(agent03: Running03) -> None:
    """The interfaces come from ``url``/``additional_interfaces``; the card can be read again."""
    async with guarded03(agent03, "jsonrpc") as client:
        assert [i.binding for i in client.interfaces] == ["JSONRPC"]
        card = await client.read_card()
    assert card.name == agent03.card.name


async def test_a_follow_up_whose_answer_is_lost_is_found_in_its_task(agent03: Running03) -> None:
    """A follow-up message names its task, so its lost answer is looked for with GetTask.

    The task's history holds the message: it is found, read until it settles, and is the
    answer. Nothing is resent; the follow-up ran once.
    """
    async with guarded03(agent03, "jsonrpc") as client:
        asked = await last_of(client.send_message(message("ask")))
    assert asked.status.state is TaskState.input_required
    with LossyProxy(agent03.http_target, lose_first(lambda seen: seen.is_send)) as proxy:
        async with guarded03(agent03, "jsonrpc", card=via(agent03.card, proxy)) as client:
            follow_up = message("complete", message_id="m-next", task_id=asked.id)
            follow_up.context_id = asked.context_id
            task = await last_of(client.send_message(follow_up))
        lost = proxy.counts["lose"]
    assert lost == 1
    assert task.id == asked.id
    assert task.status.state is TaskState.completed
    assert agent03.executor.executions["m-next"] == 1


async def test_a_call_fails_over_to_the_card_s_next_interface(agent03: Running03) -> None:
    """A preferred interface that cannot be reached moves the call to the card's next one.

    Nothing was sent over the first: the same message goes over the next interface the client
    speaks, on an origin the caller allowed.
    """
    with LossyProxy(agent03.http_target) as proxy:
        proxy.down()
        card = agent03.card.model_copy(deep=True)
        card.url = proxy.url + "/jsonrpc"
        card.additional_interfaces = [
            i for i in card.additional_interfaces or () if i.transport == "HTTP+JSON"
        ]
        async with httpx.AsyncClient(timeout=10.0) as http:
            config = ClientConfig(
                httpx_client=http,
                streaming=False,
                supported_transports=[BINDINGS["jsonrpc"], BINDINGS["rest"]],
            )
            client = guard_client(
                ClientFactory(config).create(card),
                Guard(sleep=lambda _: None),
                failover_origins=[agent03.base_url],
            )
            try:
                task = await last_of(client.send_message(message("complete", message_id="m-fo")))
                serving = client.serving
            finally:
                await client.close()
    assert task.status.state is TaskState.completed
    assert serving is not None
    assert serving.binding == "HTTP+JSON"
    assert agent03.executor.executions == {"m-fo": 1}


async def test_the_other_line_s_methods_are_the_client_s_attribute_errors(
    agent03: Running03,
) -> None:
    """1.x's names on a guarded 0.3 client fail as on the client itself, before any call."""
    async with guarded03(agent03, "jsonrpc") as client:
        with pytest.raises(AttributeError):
            await client.list_tasks(None)
        with pytest.raises(AttributeError):
            await client.get_extended_agent_card()
        with pytest.raises(AttributeError):
            async for _ in client.subscribe(TaskIdParams(id="t")):
                pass
    assert agent03.executor.total == 0
