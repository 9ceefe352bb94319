"""The httpx transports send without blocking, wait for a task found working, keep the reserve.

The agent is a MockTransport; the Guard's clock is fake and its sleep advances it. Each test
runs through GuardTransport and AsyncGuardTransport.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from a2a_client_errors import ExactlyOnce, Guard
from a2a_client_errors._http_lookup import agent_of
from a2a_client_errors._transport import AsyncGuardTransport, GuardTransport
from a2a_client_errors.testing import FakeClock, RecordingHook

URL = "http://agent.test/a2a"
WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
MODES = pytest.mark.parametrize("mode", ["sync", "async"])


class Agent:
    """A task that works for ``reads`` GetTasks, then completes; sends answered as asked.

    A send that does not block is answered with the task working; a blocking one, lost
    (``lose``: the answer is read, then the connection breaks), or completed.
    """

    def __init__(self, *, reads: int = 2, lose: bool = False, legacy: bool = False) -> None:
        self.reads = reads
        self.lose = lose
        self.legacy = legacy
        self.bodies: list[Any] = []
        self.gets = 0

    def task(self, state: str) -> dict[str, Any]:
        """The task in ``state`` (0.3 states in 0.3)."""
        if self.legacy:
            state = state.removeprefix("TASK_STATE_").lower()
        return {
            "id": "t-1",
            "contextId": "c-1",
            "status": {"state": state},
            "history": [{"messageId": "m-1", "role": "user" if self.legacy else "ROLE_USER"}],
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """Answer one request."""
        if request.url.path.endswith("agent-card.json"):
            return httpx.Response(404)
        body: Any = json.loads(request.content) if request.content else None
        method = body.get("method") if isinstance(body, dict) else None
        if method in ("GetTask", "tasks/get") or request.method == "GET":
            self.gets += 1
            state = COMPLETED if self.gets > self.reads else WORKING
            return self._answer(body, self.task(state))
        if method == "ListTasks":
            return self._answer(body, {"tasks": [self.task(WORKING)], "nextPageToken": ""})
        self.bodies.append(body)
        params = body["params"] if method else body
        configuration = params.get("configuration") or {}
        if configuration.get("returnImmediately") or configuration.get("blocking") is False:
            return self._answer(body, self._sent(WORKING))
        if self.lose:
            self.lose = False
            raise httpx.ReadError("the answer was lost", request=request)
        return self._answer(body, self._sent(COMPLETED))

    def _sent(self, state: str) -> Any:
        return self.task(state) if self.legacy else {"task": self.task(state)}

    @staticmethod
    def _answer(body: Any, result: Any) -> httpx.Response:
        if isinstance(body, dict) and "method" in body:
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})
        return httpx.Response(200, json=result)


def _guard(clock: FakeClock, **settings: Any) -> Guard:
    hooks = settings.pop("hooks", [])
    deadline = settings.pop("deadline", None)
    return Guard(
        clock=clock,
        sleep=clock.sleep,
        random=lambda: 0.0,
        deadline=deadline,
        hooks=hooks,
        exactly_once=ExactlyOnce(**settings),
    )


async def _send(
    mode: str, guard: Guard, agent: Any, body: Any, url: str = URL, **extensions: Any
) -> tuple[httpx.Response, httpx.Request]:
    """Send ``body`` through the transport of the mode; the answer and the request sent."""
    request = httpx.Request("POST", url, json=body, extensions=extensions)
    inner = httpx.MockTransport(agent)
    if mode == "sync":
        answer = GuardTransport(guard, inner).handle_request(request)
        answer.read()
    else:
        answer = await AsyncGuardTransport(guard, inner).handle_async_request(request)
        await answer.aread()
    return answer, request


def _rpc(method: str = "SendMessage") -> dict[str, Any]:
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}


@MODES
async def test_a_send_goes_without_blocking_and_is_answered_once_settled(mode: str) -> None:
    """ReturnImmediately on a copy; GetTask after growing pauses; the blocking answer."""
    clock, agent = FakeClock(), Agent(reads=2)
    body = _rpc()
    answer, request = await _send(mode, _guard(clock, non_blocking=True), agent, body)
    assert agent.bodies[0]["params"]["configuration"] == {"returnImmediately": True}
    assert agent.bodies[0]["params"]["message"] == body["params"]["message"]
    assert json.loads(request.content) == body  # the caller's request is as it was
    assert answer.json() == {"jsonrpc": "2.0", "id": 7, "result": {"task": agent.task(COMPLETED)}}
    assert agent.gets == 3
    assert clock.sleeps == [0.5, 1.0, 2.0]


@MODES
async def test_a_03_send_goes_with_blocking_false(mode: str) -> None:
    """A 0.3 message/send asks configuration.blocking = false; read with tasks/get."""
    clock, agent = FakeClock(), Agent(reads=1, legacy=True)
    answer, _ = await _send(mode, _guard(clock, non_blocking=True), agent, _rpc("message/send"))
    assert agent.bodies[0]["params"]["configuration"] == {"blocking": False}
    assert answer.json()["result"] == agent.task(COMPLETED)  # 0.3: the task itself


@MODES
async def test_a_rest_send_goes_without_blocking(mode: str) -> None:
    """HTTP+JSON: the copy's body says returnImmediately; GET /tasks/{id} until settled."""
    clock, agent = FakeClock(), Agent(reads=0)
    body = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": []}}
    guard = _guard(clock, non_blocking=True)
    answer, _ = await _send(mode, guard, agent, body, "http://agent.test/v1/message:send")
    assert agent.bodies[0]["configuration"] == {"returnImmediately": True}
    assert answer.json() == {"task": agent.task(COMPLETED)}


@MODES
async def test_the_deadline_ends_the_wait_with_the_latest_task(mode: str) -> None:
    """A task that never settles: at the deadline the latest task read is the answer."""
    clock, agent = FakeClock(), Agent(reads=10_000)
    guard = _guard(clock, non_blocking=True, deadline=10.0)
    answer, _ = await _send(mode, guard, agent, _rpc())
    assert answer.json()["result"]["task"]["status"]["state"] == WORKING
    assert clock.now() < 10.0
    assert 1 <= agent.gets <= 5


@MODES
async def test_sends_block_by_default_until_the_agent_cannot_be_looked_up(mode: str) -> None:
    """non_blocking=None: a send blocks, unless its agent is known unlisted."""
    clock, agent = FakeClock(), Agent(reads=0)
    guard = _guard(clock)
    await _send(mode, guard, agent, _rpc())
    assert "configuration" not in agent.bodies[0]["params"]
    guard.mark_unlisted(agent_of(httpx.Request("POST", URL)))
    await _send(mode, guard, agent, _rpc())
    assert agent.bodies[1]["params"]["configuration"] == {"returnImmediately": True}


@MODES
async def test_a_03_send_whose_answer_is_lost_makes_its_agent_unlisted(mode: str) -> None:
    """0.3 has no ListTasks: a lost 0.3 send is OutcomeUnknown, and its agent learnt unlisted."""
    clock, agent = FakeClock(), Agent(lose=True, legacy=True)
    guard = _guard(clock)
    with pytest.raises(httpx.ReadError):  # the transparent transport: the client's own error
        await _send(mode, guard, agent, _rpc("message/send"))
    assert len(agent.bodies) == 1  # nothing resent
    assert guard.facts(agent_of(httpx.Request("POST", URL))).unlisted
    await _send(mode, guard, agent, _rpc("message/send"))
    assert agent.bodies[1]["params"]["configuration"] == {"blocking": False}


@MODES
async def test_a_lost_blocking_send_found_working_is_answered_once_settled(mode: str) -> None:
    """The look-up finds the task working: it is read until it settles, then answered."""
    clock, agent, hook = FakeClock(), Agent(reads=1, lose=True), RecordingHook()
    answer, _ = await _send(mode, _guard(clock, hooks=[hook]), agent, _rpc())
    assert answer.json()["result"]["task"]["status"]["state"] == COMPLETED
    assert len(agent.bodies) == 1  # never resent
    assert hook.resolutions == ["found"]


@MODES
async def test_a_send_under_a_deadline_keeps_the_reserve_for_the_look_up(mode: str) -> None:
    """Deadline 2 s, reserve 20 %: the send's timeouts end at 1.6 s; the look-up finds it."""
    clock = FakeClock()
    timeouts: list[Any] = []

    def agent(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "SendMessage":
            timeouts.append(request.extensions["timeout"]["read"])
            clock.advance(request.extensions["timeout"]["read"])  # it hangs until then
            raise httpx.ReadTimeout("no answer", request=request)
        return Agent(reads=0)(request)

    hook = RecordingHook()
    guard = _guard(clock, deadline=2.0, hooks=[hook])
    answer, request = await _send(
        mode, guard, agent, _rpc(), timeout={"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
    )
    assert timeouts == [pytest.approx(1.6)]
    assert hook.resolutions == ["found"]
    assert answer.json()["result"]["task"]["id"] == "t-1"
    assert request.extensions["timeout"]["read"] == 5.0  # the caller's own, given back


class LosingReads(Agent):
    """The same agent, whose first ``lost`` GetTask answers are lost on the way."""

    def __init__(self, lost: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lost = lost

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """Answer one request; lose the first GetTask answers."""
        body: Any = json.loads(request.content) if request.content else None
        if isinstance(body, dict) and body.get("method") == "GetTask" and self.lost:
            self.lost -= 1
            raise httpx.ReadError("the read's answer was lost", request=request)
        return super().__call__(request)


@MODES
async def test_lost_reads_of_a_wait_never_end_it_early(mode: str) -> None:
    """Three GetTask answers lost: the wait reads on; the settled task, not the working one."""
    clock, agent = FakeClock(), LosingReads(3, reads=1)
    guard = _guard(clock, non_blocking=True, deadline=30.0)
    answer, _ = await _send(mode, guard, agent, _rpc())
    assert answer.json()["result"]["task"]["status"]["state"] == COMPLETED
    assert agent.lost == 0
    assert clock.now() < 30.0


@MODES
async def test_a_wait_whose_reads_all_fail_ends_at_the_deadline(mode: str) -> None:
    """Every read lost: the working task is the answer only once the deadline came."""
    clock, agent = FakeClock(), LosingReads(1000, reads=1)
    guard = _guard(clock, non_blocking=True, deadline=30.0)
    answer, _ = await _send(mode, guard, agent, _rpc())
    assert answer.json()["result"]["task"]["status"]["state"] == WORKING
    assert clock.now() >= 30.0 - guard.exactly_once.poll_max  # not before the deadline's reach
