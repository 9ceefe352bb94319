"""The test support module: FakeClock, set_testing and the wire builders.

The builders must classify back to the reason they were built for, on every binding.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import Action, Reason, classify, normalize
from a2a_client_errors._failures import RetryExhausted
from a2a_client_errors._guard import Guard
from a2a_client_errors.testing import (
    FakeClock,
    error_info,
    error_response,
    jsonrpc_error,
    problem_error,
    set_testing,
    status_error,
)
from a2a_client_errors.testing.lossy import (
    LosingTransport,
    LossyProxy,
    Seen,
    lose_sends,
    lose_share,
)
from a2a_client_errors.testing.peer import EmbeddedPeer, require_dependencies
from a2a_client_errors.types import WireShape
from tests.asgi import serve

if TYPE_CHECKING:
    from collections.abc import Iterator

ALL_REASONS = list(Reason)
A2A_REASONS = [r for r in Reason if r.is_a2a]


def _always_503() -> httpx.Response:
    return httpx.Response(503)


# --- FakeClock --------------------------------------------------------------------------------


def test_fake_clock_starts_where_told_and_only_moves_when_told() -> None:
    """now() is the start until advance() or sleep() moves it; the clock is callable."""
    clock = FakeClock(start=100.0)
    assert clock.now() == 100.0
    assert clock() == 100.0
    clock.advance(2.5)
    assert clock.now() == 102.5
    assert clock.sleeps == []


def test_fake_clock_sleep_records_and_advances_at_once() -> None:
    """sleep() records each delay and moves the clock by it, without waiting."""
    clock = FakeClock()
    started = time.perf_counter()
    clock.sleep(3600.0)
    clock.sleep(0.5)
    assert time.perf_counter() - started < 1.0
    assert clock.sleeps == [3600.0, 0.5]
    assert clock.now() == 3600.5


def test_fake_clock_never_goes_backwards() -> None:
    """advance() refuses a negative step; a negative sleep is recorded but moves nothing."""
    clock = FakeClock(start=5.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1.0)
    clock.sleep(-2.0)
    assert clock.now() == 5.0
    assert clock.sleeps == [-2.0]


def test_fake_clock_is_safe_across_threads() -> None:
    """8 threads x 1000 sleeps of 0.5 add up exactly."""
    clock = FakeClock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait(timeout=10)
        for _ in range(1000):
            clock.sleep(0.5)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(clock.sleeps) == 8000
    assert clock.now() == 4000.0


def test_fake_clock_drives_a_guard() -> None:
    """clock=fake.now, sleep=fake.sleep: the Guard's backoff happens on the fake clock."""
    clock = FakeClock()
    guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 1.0)
    with pytest.raises(RetryExhausted):
        guard.call(_always_503)
    assert clock.sleeps == [0.5, 1.0]
    assert clock.now() == 1.5


async def test_fake_clock_sleep_works_in_acall() -> None:
    """FakeClock.sleep (sync) serves as the sleep of acall too."""
    clock = FakeClock()
    guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 1.0)
    with pytest.raises(RetryExhausted):
        await guard.acall(_always_503)
    assert clock.sleeps == [0.5, 1.0]


# --- set_testing ------------------------------------------------------------------------------


def test_set_testing_applies_at_once_and_restores_as_a_context_manager() -> None:
    """Without `with` it is a switch; with `with` the previous state comes back."""
    slept: list[float] = []
    guard = Guard(sleep=slept.append, random=lambda: 1.0, max_attempts=2)
    restore = set_testing(True)
    try:
        with pytest.raises(RetryExhausted):
            guard.call(_always_503)
        assert slept == []
    finally:
        restore.__exit__(None, None, None)
    with pytest.raises(RetryExhausted):
        guard.call(_always_503)
    assert slept == [0.5]


def test_set_testing_nests() -> None:
    """An inner set_testing(False) turns sleeping back on until it exits, then testing resumes."""
    slept: list[float] = []
    guard = Guard(sleep=slept.append, random=lambda: 1.0, max_attempts=4)
    with set_testing(True, attempts=3):
        with set_testing(False):
            with pytest.raises(RetryExhausted) as caught:
                guard.call(_always_503)
            assert caught.value.attempts == 4
            assert slept == [0.5, 1.0, 2.0]
        with pytest.raises(RetryExhausted) as caught:
            guard.call(_always_503)
        assert caught.value.attempts == 3
        assert slept == [0.5, 1.0, 2.0]
    with pytest.raises(RetryExhausted) as caught:
        guard.call(_always_503)
    assert caught.value.attempts == 4
    assert slept == [0.5, 1.0, 2.0, 0.5, 1.0, 2.0]


def test_set_testing_attempts_cap_never_raises_the_guards_own() -> None:
    """`attempts` caps a Guard's attempts; it never lets a call make more than its max."""
    guard = Guard(sleep=lambda _: None, max_attempts=2)
    with set_testing(True, attempts=5), pytest.raises(RetryExhausted) as caught:
        guard.call(_always_503)
    assert caught.value.attempts == 2


def test_set_testing_restores_after_an_exception() -> None:
    """An exception inside the block still restores the previous state."""
    slept: list[float] = []
    guard = Guard(sleep=slept.append, random=lambda: 1.0, max_attempts=2)
    with pytest.raises(RuntimeError, match="boom"), set_testing(True, attempts=1):
        raise RuntimeError("boom")
    with pytest.raises(RetryExhausted) as caught:
        guard.call(_always_503)
    assert caught.value.attempts == 2
    assert slept == [0.5]


@pytest.mark.parametrize("attempts", [1, 2, 4])
def test_set_testing_caps_attempts(attempts: int) -> None:
    """attempts=N: a Guard allowed 5 attempts makes N."""
    calls: list[int] = []

    def fn() -> httpx.Response:
        calls.append(1)
        return httpx.Response(503)

    guard = Guard(sleep=lambda s: None, max_attempts=5)
    with set_testing(True, attempts=attempts), pytest.raises(RetryExhausted) as caught:
        guard.call(fn)
    assert len(calls) == attempts
    assert caught.value.attempts == attempts


def test_set_testing_rejects_zero_attempts_and_changes_nothing() -> None:
    """attempts=0 is refused, and the state stays as it was."""
    with pytest.raises(ValueError, match="attempts"):
        set_testing(True, attempts=0)
    slept: list[float] = []
    with pytest.raises(RetryExhausted):
        Guard(sleep=slept.append, random=lambda: 1.0, max_attempts=2).call(_always_503)
    assert slept == [0.5]


def test_set_testing_skips_the_default_time_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Guard with no sleep= uses time.sleep; set_testing makes it skip even that."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    guard = Guard(random=lambda: 1.0, max_attempts=2)
    with set_testing(True), pytest.raises(RetryExhausted):
        guard.call(_always_503)
    assert slept == []
    with pytest.raises(RetryExhausted):
        guard.call(_always_503)
    assert slept == [0.5]  # the patched time.sleep: nothing really slept


async def test_set_testing_skips_the_default_asyncio_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no sleep=, acall uses asyncio.sleep; set_testing makes it skip even that."""
    slept: list[float] = []

    async def fake_sleep(seconds: float, result: object = None) -> object:
        slept.append(seconds)
        return result

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    guard = Guard(random=lambda: 1.0, max_attempts=2)
    with set_testing(True), pytest.raises(RetryExhausted):
        await guard.acall(_always_503)
    assert 0.5 not in slept
    with pytest.raises(RetryExhausted):
        await guard.acall(_always_503)
    assert 0.5 in slept


# --- wire builders ----------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ALL_REASONS, ids=str)
def test_jsonrpc_builder_classifies_back(reason: Reason) -> None:
    """jsonrpc_error(reason) classifies to that reason and the table's action."""
    body = jsonrpc_error(reason)
    decision = classify(body)
    assert decision.reason is reason
    assert decision.action is reason.row.action
    assert body["error"]["code"] == (reason.row.jsonrpc or -32603)
    error = normalize(body)
    assert error is not None
    assert error.wire is WireShape.JSONRPC


@pytest.mark.parametrize("legacy", [False, True], ids=["1.0.1", "1.0.0"])
@pytest.mark.parametrize("reason", ALL_REASONS, ids=str)
def test_status_builder_classifies_back(reason: Reason, legacy: bool) -> None:
    """status_error(reason) (either table) as an HTTP response classifies to that reason."""
    status, body = status_error(reason, legacy=legacy)
    expected_status = reason.row.http_legacy if legacy else reason.row.http
    assert status == expected_status
    decision = classify(httpx.Response(status, json=body))
    assert decision.reason is reason
    assert decision.action is reason.row.action


@pytest.mark.parametrize("reason", A2A_REASONS, ids=str)
def test_problem_builder_classifies_back(reason: Reason) -> None:
    """problem_error(reason) for the nine A2A errors classifies to that reason."""
    status, body = problem_error(reason)
    assert body["type"] == reason.row.problem_type
    response = httpx.Response(
        status, json=body, headers={"content-type": "application/problem+json"}
    )
    decision = classify(response)
    assert decision.reason is reason
    assert decision.action is reason.row.action


@pytest.mark.parametrize("reason", ALL_REASONS, ids=str)
@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
def test_error_response_classifies_back_on_every_binding(reason: Reason, binding: str) -> None:
    """error_response(reason, binding=...) round-trips through classify for every reason."""
    response = error_response(reason, binding=binding)
    if binding == "jsonrpc":
        assert response.status_code == 200
    decision = classify(response)
    assert decision.reason is reason
    assert decision.action is reason.row.action


@pytest.mark.parametrize("reason", A2A_REASONS, ids=str)
def test_error_response_problem_binding_classifies_back(reason: Reason) -> None:
    """error_response(reason, binding="problem") round-trips for the nine A2A errors."""
    response = error_response(reason, binding="problem")
    assert response.headers["content-type"] == "application/problem+json"
    error = normalize(response)
    assert error is not None
    assert error.reason is reason
    assert error.wire is WireShape.PROBLEM_JSON


def test_error_response_carries_headers_to_the_hint() -> None:
    """Extra headers (Retry-After) reach the decision."""
    response = error_response(
        Reason.INTERNAL_ERROR, binding="http+json", headers={"Retry-After": "7"}
    )
    decision = classify(response)
    assert decision.action is Action.RETRY
    assert decision.retry_after == 7


def test_builders_carry_metadata_message_and_ids() -> None:
    """metadata, message, request_id and code reach the body and the normalised error."""
    body = jsonrpc_error(
        Reason.TASK_NOT_FOUND,
        request_id="req-9",
        message="no such task",
        metadata={"taskId": "t-1"},
        code=-32001,
    )
    assert body["id"] == "req-9"
    error = normalize(body)
    assert error is not None
    assert error.message == "no such task"
    assert dict(error.metadata) == {"taskId": "t-1"}
    assert error.is_a2a_domain
    _, status_body = status_error(Reason.VERSION_NOT_SUPPORTED, metadata={"supported": "1.0"})
    found = normalize(httpx.Response(400, json=status_body))
    assert found is not None
    assert dict(found.metadata) == {"supported": "1.0"}


def test_builders_keep_an_unknown_reason_as_sent() -> None:
    """An unknown reason is kept as a string and reported, on JSON-RPC and HTTP+JSON."""
    for x in (
        jsonrpc_error("QUOTA_OF_WIDGETS_EXCEEDED"),
        httpx.Response(500, json=status_error("QUOTA_OF_WIDGETS_EXCEEDED")[1]),
    ):
        decision = classify(x)
        assert decision.reason == "QUOTA_OF_WIDGETS_EXCEEDED"
        assert not isinstance(decision.reason, Reason)
        assert decision.action is Action.REPORT


def test_error_info_builder_shape() -> None:
    """error_info is a ProtoJSON google.rpc.ErrorInfo with the A2A domain."""
    assert error_info("TASK_NOT_FOUND", {"taskId": "t"}) == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "TASK_NOT_FOUND",
        "domain": "a2a-protocol.org",
        "metadata": {"taskId": "t"},
    }


def test_error_response_rejects_an_unknown_binding() -> None:
    """An unknown binding name is a ValueError naming the known ones."""
    with pytest.raises(ValueError, match="jsonrpc"):
        error_response(Reason.TASK_NOT_FOUND, binding="grpc-web")


def test_losing_transport_forwards_loses_and_drops_by_its_plan() -> None:
    """Forward passes; lose sends, reads and throws the answer; drop sends nothing."""
    reached: list[str] = []

    def agent(request: httpx.Request) -> httpx.Response:
        reached.append(request.url.path)
        return httpx.Response(200, json={"ok": True})

    actions = iter(["forward", "lose", "drop"])
    losing = LosingTransport(lambda seen: next(actions), inner=httpx.MockTransport(agent))
    with httpx.Client(transport=losing) as client:
        assert client.get("http://agent.test/a").json() == {"ok": True}
        with pytest.raises(httpx.ReadError):
            client.get("http://agent.test/b")
        with pytest.raises(httpx.RemoteProtocolError):
            client.get("http://agent.test/c")
    assert reached == ["/a", "/b"]  # the dropped request never reached the agent
    assert losing.counts == {"forward": 1, "lose": 1, "drop": 1}
    assert [seen.path for seen in losing.seen] == ["/a", "/b", "/c"]


def test_losing_transport_reads_a_request_rebuilt_to_follow_a_redirect() -> None:
    """A 307 followed by the client: the plan reads the resent body, the same bytes."""

    def agent(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            return httpx.Response(307, headers={"Location": "/new"})
        return httpx.Response(200, json={"ok": True})

    losing = LosingTransport(inner=httpx.MockTransport(agent))
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-1"}}
    with httpx.Client(transport=losing, follow_redirects=True) as client:
        assert client.post("http://agent.test/old", json=body).json() == {"ok": True}
    assert [seen.path for seen in losing.seen] == ["/old", "/new"]
    assert losing.seen[0].body == losing.seen[1].body


async def test_losing_transport_async_loses_a_send_by_lose_sends() -> None:
    """The async side, with lose_sends: the first send's answer is lost once."""

    def agent(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"ok": True})

    losing = LosingTransport(lose_sends(1), ainner=httpx.MockTransport(agent))
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}
    async with httpx.AsyncClient(transport=losing) as client:
        with pytest.raises(httpx.ReadError):
            await client.post("http://agent.test/", json=body)
        assert (await client.post("http://agent.test/", json=body)).json() == {"ok": True}
    assert losing.counts == {"lose": 1, "forward": 1}


@pytest.mark.parametrize(
    ("method", "path", "body", "sends"),
    [
        ("POST", "/jsonrpc", b'{"jsonrpc": "2.0", "method": "SendMessage"}', True),
        ("POST", "/jsonrpc", b'{"jsonrpc": "2.0", "method": "message/stream"}', True),
        ("POST", "/jsonrpc", b'{"jsonrpc": "2.0", "method": "GetTask"}', False),
        ("POST", "/rest/message:send", b'{"message": {}}', True),
        ("POST", "/rest/message:stream?x=1", b"{}", True),
        ("GET", "/rest/tasks/t-1", b"", False),
    ],
)
def test_the_proxy_tells_a_send_on_any_binding(
    method: str, path: str, body: bytes, sends: bool
) -> None:
    """A send is a SendMessage or SendStreamingMessage, in 1.0 or 0.3 names or by its route."""
    assert Seen(method, path, body).is_send is sends


def test_lose_share_draws_a_seeded_schedule_of_sends_only() -> None:
    """The same seed, the same schedule; a read is never lost; share 0 and 1 are the bounds."""
    send = Seen("POST", "/rest/message:send", b"{}")
    read = Seen("GET", "/rest/tasks/t-1", b"")
    first = lose_share(0.5, seed=7, mode="drop")
    again = lose_share(0.5, seed=7, mode="drop")
    drawn = [first(send) for _ in range(40)]
    assert drawn == [again(send) for _ in range(40)]
    assert set(drawn) == {"drop", "forward"}
    assert {lose_share(1.0)(read) for _ in range(5)} == {"forward"}
    assert {lose_share(1.0, mode="cut")(send) for _ in range(5)} == {"cut"}
    assert {lose_share(0.0)(send) for _ in range(5)} == {"forward"}


def test_the_proxy_forwards_a_chunked_body_with_its_length() -> None:
    """A chunked request reaches the agent whole, re-framed with a Content-Length."""
    received: list[tuple[bytes, str | None, str | None]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        chunked = headers.get(b"transfer-encoding")
        received.append((body, length and length.decode(), chunked and chunked.decode()))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def parts() -> Iterator[bytes]:
        yield b'{"jsonrpc": "2.0", '
        yield b'"method": "GetTask"}'

    with serve(app) as base, LossyProxy(base.removeprefix("http://")) as proxy:
        answer = httpx.post(proxy.url + "/jsonrpc", content=parts(), timeout=10.0)
    assert answer.text == "ok"
    body = b'{"jsonrpc": "2.0", "method": "GetTask"}'
    assert received == [(body, str(len(body)), None)]
    assert proxy.seen[0].rpc_method == "GetTask"
    assert proxy.counts == {"forward": 1}


def test_a_peer_that_is_not_running_refuses_what_needs_it() -> None:
    """Before start: no origin, stop is a no-op, calls and reads of its stores refuse."""
    peer = EmbeddedPeer()
    assert (peer.origin, peer.other_origin, peer.http_target) == ("", "", "")
    assert peer.stop() is True

    async def never() -> None:
        """A coroutine the peer must close, not leave unawaited."""

    coro = never()
    with pytest.raises(RuntimeError, match="not running"):
        peer.call(coro)
    assert coro.cr_frame is None  # closed
    with pytest.raises(RuntimeError, match="not running"):
        peer.fill(1)
    with pytest.raises(RuntimeError, match="not running"):
        peer.task_ids()
    with pytest.raises(ValueError, match="unknown binding"):
        peer.task_ids("smoke-signals")
    assert repr(peer.dialect) == "PeerDialect()"


@pytest.mark.a2a_sdk("1")
@pytest.mark.parametrize(("module", "hint"), [("uvicorn", " uvicorn"), ("grpc.aio", "")])
def test_a_peer_without_its_dependencies_says_what_to_install(
    module: str, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing uvicorn or grpcio: an ImportError naming it, the install line, who needs it."""
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError
    with pytest.raises(ImportError) as raised:
        require_dependencies("my test")
    said = str(raised.value)
    assert said.startswith("my test needs a2a-sdk")
    assert f"{module!r} is missing" in said
    assert said.endswith(f"pip install 'a2a-client-errors[a2a]'{hint}")
    with pytest.raises(ImportError, match="EmbeddedPeer needs"):
        EmbeddedPeer().start()
