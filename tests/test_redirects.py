"""No redirect carries a request to another origin: the reading of a 3xx, and the httpx doors.

Two origins are two real HTTP servers on 127.0.0.1 (tests/loopback.py), on two ports: the
agent, which answers a call with a redirect, and the other origin, which records what reaches
it and must receive nothing. Sleeps go to a fake clock.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import (
    Action,
    AsyncGuardTransport,
    Delivery,
    FixRequestNeeded,
    Guard,
    GuardTransport,
    OutcomeUnknown,
    classify,
    normalize,
)
from a2a_client_errors._redirects import (
    LOCATION,
    REFUSED,
    crosses_origin,
    followed_elsewhere,
    location_of,
    origin_of,
    refuse,
    refuse_redirects,
    refuse_redirects_of,
    safe_location,
)
from a2a_client_errors._wire import MAX_TEXT
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.testing.lossy import LosingTransport, lose_sends
from tests.loopback import Loopback, Recorded, Reply

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

AGENT = "http://agent.test/jsonrpc"
KEY = "key-SECRET-5e1f"
TASK = {
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED"},
    "history": [{"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}],
}


def _send(message_id: str = "m-1") -> dict[str, Any]:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def _answered(request: Recorded) -> Reply:
    """A JSON-RPC agent that answers every call with the task."""
    rpc = request.json()
    result = {"task": TASK} if rpc.get("method") == "SendMessage" else TASK
    return Reply.json(200, {"jsonrpc": "2.0", "id": rpc.get("id"), "result": result})


def _redirect(status: int, location: str, request_url: str = AGENT, **kw: Any) -> httpx.Response:
    request = httpx.Request("POST", request_url, json=_send())
    return httpx.Response(status, headers={"Location": location}, request=request, **kw)


@pytest.fixture(name="other")
def other_fixture() -> Iterator[Loopback]:
    """The other origin: it answers every call with a task of its own, and records it."""
    with Loopback(_answered) as server:
        yield server


@pytest.fixture(name="agent")
def agent_fixture(other: Loopback) -> Iterator[Loopback]:
    """The agent: every call is answered with a 307 to the other origin, a query and userinfo."""
    location = f"http://user:pw@{other.url.removeprefix('http://')}/jsonrpc?token=t-SECRET"
    with Loopback([Reply(307, headers={"Location": location})]) as server:
        yield server


def _guard() -> Guard:
    clock = FakeClock()
    return Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 0.0)


# --- where a redirect points ----------------------------------------------------------------


def test_what_is_kept_of_a_location_is_scheme_host_port_and_path() -> None:
    """User info, query and fragment go; the port stays; IPv6 is bracketed; length is capped."""
    assert (
        safe_location(httpx.URL("https://user:secret@b.example:8443/a2a?token=t#f"))
        == "https://b.example:8443/a2a"
    )
    assert safe_location(httpx.URL("http://[::1]:8080/p")) == "http://[::1]:8080/p"
    assert safe_location(httpx.URL("http://bücher.example/p")) == "http://xn--bcher-kva.example/p"
    assert len(safe_location(httpx.URL("http://b.example/" + "a" * 10_000))) == MAX_TEXT


def test_a_location_keeps_no_control_or_bidi_character() -> None:
    """The path is kept percent-encoded: a newline or a bidi override never comes through."""
    kept = safe_location(httpx.URL("http://b.example/a%0ab\u202ec"))
    assert kept == "http://b.example/a%0ab%E2%80%AEc"
    assert kept.isascii()
    assert kept.isprintable()


@pytest.mark.parametrize(
    ("status", "location", "crosses"),
    [
        (307, "http://other.test/jsonrpc", True),
        (308, "http://agent.test:8080/jsonrpc", True),
        (302, "https://agent.test/jsonrpc", True),  # another scheme is another origin
        (301, "//other.test/jsonrpc", True),
        (303, "/elsewhere", False),
        (307, "http://agent.test:80/jsonrpc/", False),  # the default port, written out
        (307, "http://AGENT.test/x", False),
        (300, "http://other.test/jsonrpc", False),  # httpx follows no 300
        (304, "http://other.test/jsonrpc", False),
        (307, "http://other.test:notaport/", False),  # unreadable: httpx would not follow it
    ],
)
def test_a_redirect_crosses_origin_when_httpx_would_follow_it_elsewhere(
    status: int, location: str, crosses: bool
) -> None:
    """Scheme, host and port compared, as httpx reads the Location it would follow."""
    assert crosses_origin(_redirect(status, location)) is crosses


def test_a_transport_s_response_is_read_against_the_request_it_answers() -> None:
    """A transport's response has no request yet: the request is given."""
    response = httpx.Response(307, headers={"Location": "http://other.test/"})
    request = httpx.Request("POST", AGENT)
    assert not crosses_origin(response)
    assert crosses_origin(response, request)
    assert origin_of(request.url) == ("http", "agent.test", 80)


def test_refusing_takes_the_location_out_of_a_cross_origin_redirect_only() -> None:
    """Another origin: Location gone, kept safe in extensions; the same origin: left to httpx."""
    elsewhere = _redirect(307, "http://u:p@other.test/a2a?token=t")
    request_bytes = elsewhere.request.content
    assert refuse(elsewhere)
    assert "location" not in elsewhere.headers
    assert not elsewhere.has_redirect_location
    assert elsewhere.extensions[REFUSED] is True
    assert location_of(elsewhere) == "http://other.test/a2a"
    assert elsewhere.request.content == request_bytes  # the request is not the door's to change

    home = _redirect(307, "/jsonrpc/")
    assert not refuse(home)
    assert home.headers["location"] == "/jsonrpc/"
    assert home.extensions[LOCATION] == "http://agent.test/jsonrpc/"
    assert REFUSED not in home.extensions
    assert not refuse(httpx.Response(200, request=home.request))


# --- what a 3xx answer is -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "delivery"),
    [
        (301, Delivery.UNKNOWN),
        (302, Delivery.UNKNOWN),
        (303, Delivery.UNKNOWN),
        (307, Delivery.NOT_PROCESSED),
        (308, Delivery.NOT_PROCESSED),
    ],
)
def test_a_redirect_to_another_origin_is_fix_request_naming_the_location(
    status: int, delivery: Delivery
) -> None:
    """fix_request, the location in its own field; 301-303 may answer a POST already done."""
    decision = classify(
        _redirect(status, "https://u:p@other.test:8443/a2a?k=SECRET#f"), operation="SendMessage"
    )
    assert decision.action is Action.FIX_REQUEST
    assert decision.delivery is delivery
    assert decision.error is not None
    assert decision.error.location == "https://other.test:8443/a2a"
    assert decision.error.http_status == status
    assert decision.error.to_dict()["location"] == "https://other.test:8443/a2a"
    assert "SECRET" not in str(decision)
    assert "u:p" not in str(decision)
    assert "(to https://other.test:8443/a2a)" in str(decision.error)


def test_a_cross_origin_redirect_is_fix_request_whatever_its_body_says() -> None:
    """An A2A body on a redirect elsewhere does not make it the agent's answer."""
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "no task"}}
    redirect = _redirect(307, "http://other.test/jsonrpc", json=body)
    error = normalize(redirect)
    assert error is not None
    assert error.reason is None
    assert error.location == "http://other.test/jsonrpc"
    home = normalize(_redirect(307, "/jsonrpc/", json=body))
    assert home is not None
    assert home.reason == "TASK_NOT_FOUND"  # on its own origin, the agent's body is read


def test_a_redirect_on_the_same_origin_is_fix_request_too() -> None:
    """With no A2A body, any 3xx is fix_request and names where it points (joined)."""
    decision = classify(_redirect(308, "/v2/jsonrpc"))
    assert decision.action is Action.FIX_REQUEST
    assert decision.error is not None
    assert decision.error.location == "http://agent.test/v2/jsonrpc"
    alone = normalize(httpx.Response(307, headers={"Location": "/v2/jsonrpc?x=1"}))
    assert alone is not None
    assert alone.location == "/v2/jsonrpc"  # no request to join it to: its path


def test_a_redirect_without_a_readable_location_names_none() -> None:
    """No Location, or one httpx cannot read: fix_request, ``location`` None."""
    for response in (
        httpx.Response(307, request=httpx.Request("POST", AGENT)),
        _redirect(307, "http://other.test:notaport/"),
    ):
        error = normalize(response)
        assert error is not None
        assert error.location is None
        assert "(to" not in str(error)


def test_an_answer_an_httpx_client_followed_to_another_origin_is_not_the_agent_s() -> None:
    """A 200 after a cross-origin hop is fix_request naming the redirect; same-origin hops: ok."""
    redirect = _redirect(307, "http://other.test/jsonrpc")
    elsewhere = httpx.Response(
        200,
        json={"jsonrpc": "2.0", "id": 1, "result": {"task": TASK}},
        request=httpx.Request("POST", "http://other.test/jsonrpc"),
        history=[redirect],
    )
    assert followed_elsewhere(elsewhere) is redirect
    decision = classify(elsewhere, operation="SendMessage")
    assert decision.action is Action.FIX_REQUEST
    assert decision.error is not None
    assert decision.error.http_status == 307
    assert decision.error.location == "http://other.test/jsonrpc"
    assert "followed" in decision.error.message

    home = httpx.Response(
        200,
        json={"jsonrpc": "2.0", "id": 1, "result": {"task": TASK}},
        request=httpx.Request("POST", "http://agent.test/jsonrpc/"),
        history=[_redirect(307, "/jsonrpc/")],
    )
    assert followed_elsewhere(home) is None
    assert classify(home, operation="SendMessage").action is Action.OK


# --- the response hook ----------------------------------------------------------------------


async def test_the_hook_is_installed_once_after_the_client_s_own() -> None:
    """The client's hooks stay, in their order; a second install adds nothing."""

    async def mine(response: httpx.Response) -> None:
        """A hook of the caller's."""

    async with httpx.AsyncClient(event_hooks={"response": [mine]}) as http:
        refuse_redirects_of(http)
        refuse_redirects_of(http)
        assert http.event_hooks["response"] == [mine, refuse_redirects]
        assert http.event_hooks["request"] == []


async def test_the_hook_stops_an_async_client_that_follows_redirects(
    agent: Loopback, other: Loopback
) -> None:
    """With ``follow_redirects=True``, the client answers with the 307 itself."""
    async with httpx.AsyncClient(follow_redirects=True, headers={"X-API-Key": KEY}) as http:
        refuse_redirects_of(http)
        response = await http.post(f"{agent.url}/jsonrpc", json=_send())
    assert response.status_code == 307
    assert response.extensions[REFUSED] is True
    assert other.requests == []


# --- through the transports -----------------------------------------------------------------


def test_guard_transport_hands_back_the_redirect_unfollowable(
    agent: Loopback, other: Loopback
) -> None:
    """raise_failures=False: the client gets the 307 without Location, and follows nothing."""
    transport = GuardTransport(_guard())
    with httpx.Client(
        transport=transport, follow_redirects=True, headers={"X-API-Key": KEY}
    ) as client:
        response = client.post(f"{agent.url}/jsonrpc", json=_send())
    assert response.status_code == 307
    assert "location" not in response.headers
    record = response.extensions["a2a_call"]
    assert record.decision.action is Action.FIX_REQUEST
    assert record.decision.error.location == f"{other.url}/jsonrpc"
    assert len(agent.requests) == 1
    assert other.requests == []


def test_guard_transport_raises_the_redirect_as_fix_request(
    agent: Loopback, other: Loopback
) -> None:
    """raise_failures=True: FixRequestNeeded naming the location, before httpx could follow."""
    transport = GuardTransport(_guard(), raise_failures=True)
    with (
        httpx.Client(
            transport=transport, follow_redirects=True, headers={"X-API-Key": KEY}
        ) as client,
        pytest.raises(FixRequestNeeded) as failed,
    ):
        client.post(f"{agent.url}/jsonrpc", json=_send())
    assert failed.value.error is not None
    assert failed.value.error.location == f"{other.url}/jsonrpc"
    assert failed.value.decision.delivery is Delivery.NOT_PROCESSED
    assert failed.value.attempts == 1
    assert other.requests == []


@pytest.mark.parametrize("raise_failures", [False, True], ids=["hands-back", "raises"])
async def test_async_guard_transport_never_lets_the_client_follow_elsewhere(
    agent: Loopback, other: Loopback, raise_failures: bool
) -> None:
    """The async twin: the 307 handed back unfollowable, or FixRequestNeeded; nothing elsewhere."""
    transport = AsyncGuardTransport(_guard(), raise_failures=raise_failures)
    async with httpx.AsyncClient(
        transport=transport, follow_redirects=True, headers={"X-API-Key": KEY}
    ) as client:
        if raise_failures:
            with pytest.raises(FixRequestNeeded) as failed:
                await client.post(f"{agent.url}/jsonrpc", json=_send())
            assert failed.value.error is not None
            location = failed.value.error.location
        else:
            response = await client.post(f"{agent.url}/jsonrpc", json=_send())
            assert response.status_code == 307
            assert not response.has_redirect_location
            location = response.extensions["a2a_call"].decision.error.location
    assert location == f"{other.url}/jsonrpc"
    assert other.requests == []


@pytest.fixture(name="moved")
def moved_fixture() -> Iterator[Loopback]:
    """An agent that moved its endpoint on its own origin: /old answers 307 to /jsonrpc."""

    def answer(request: Recorded) -> Reply:
        if request.path == "/old":
            return Reply(307, headers={"Location": "/jsonrpc"})
        return _answered(request)

    with Loopback(answer) as server:
        yield server


def test_a_same_origin_redirect_is_left_to_the_client(moved: Loopback) -> None:
    """raise_failures=False: the Location stays, the client follows it, as without a guard."""
    with httpx.Client(transport=GuardTransport(_guard()), follow_redirects=True) as client:
        response = client.post(f"{moved.url}/old", json=_send())
    assert response.status_code == 200
    assert response.json()["result"]["task"]["id"] == "t-1"
    assert [r.path for r in moved.requests] == ["/old", "/jsonrpc"]
    assert moved.requests[0].body == moved.requests[1].body  # a 307 resends the same bytes


def test_a_same_origin_redirect_is_raised_by_a_raising_transport(moved: Loopback) -> None:
    """raise_failures=True raises every fix_request: the location, joined, names the new URL."""
    transport = GuardTransport(_guard(), raise_failures=True)
    with (
        httpx.Client(transport=transport, follow_redirects=True) as client,
        pytest.raises(FixRequestNeeded) as failed,
    ):
        client.post(f"{moved.url}/old", json=_send())
    assert failed.value.error is not None
    assert failed.value.error.location == f"{moved.url}/jsonrpc"
    assert [r.path for r in moved.requests] == ["/old"]


def _lost_then_redirected(other: Loopback) -> Callable[[Recorded], Reply]:
    """An agent that answers the send (an answer lost on the way) and redirects every read."""

    def answer(request: Recorded) -> Reply:
        is_send = request.method == "POST" and request.json().get("method") == "SendMessage"
        if is_send:
            return _answered(request)
        return Reply(307, headers={"Location": f"{other.url}{request.path}"})

    return answer


def _send_sync(url: str, losing: LosingTransport) -> None:
    transport = GuardTransport(_guard(), losing, raise_failures=True)
    headers = {"X-API-Key": KEY}
    with httpx.Client(transport=transport, follow_redirects=True, headers=headers) as client:
        client.post(url, json=_send())


async def _send_async(url: str, losing: LosingTransport) -> None:
    transport = AsyncGuardTransport(_guard(), losing, raise_failures=True)
    headers = {"X-API-Key": KEY}
    async with httpx.AsyncClient(
        transport=transport, follow_redirects=True, headers=headers
    ) as client:
        await client.post(url, json=_send())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_the_look_up_s_reads_never_follow_a_redirect(
    other: Loopback, asynchronous: bool
) -> None:
    """A lost send is looked up; the reads, redirected elsewhere, go nowhere: OutcomeUnknown."""
    with Loopback(_lost_then_redirected(other)) as agent:
        losing = LosingTransport(lose_sends(1))
        url = f"{agent.url}/jsonrpc"
        with pytest.raises(OutcomeUnknown) as unknown:
            await _send_async(url, losing) if asynchronous else _send_sync(url, losing)
        received = agent.requests
    sends = [r for r in received if r.method == "POST" and r.json()["method"] == "SendMessage"]
    assert len(sends) == 1  # nothing resent
    assert len(received) > 1  # the look-up asked the agent
    assert other.requests == []
    assert unknown.value.maybe_processed


def test_guard_call_refuses_an_answer_its_client_fetched_from_another_origin(
    agent: Loopback, other: Loopback
) -> None:
    """The caller's own client followed: the other origin's task is not handed back."""
    with httpx.Client(follow_redirects=True) as client, pytest.raises(FixRequestNeeded) as failed:
        _guard().call(client.post, f"{agent.url}/jsonrpc", json=_send(), operation="SendMessage")
    assert failed.value.error is not None
    assert failed.value.error.location == f"{other.url}/jsonrpc"
    assert failed.value.attempts == 1  # not resent, so not carried there again
    assert len(other.requests) == 1


def test_guard_call_reads_a_redirect_its_client_did_not_follow(
    agent: Loopback, other: Loopback
) -> None:
    """A 3xx the function returns is fix_request naming the location, and is not resent."""
    with httpx.Client() as client, pytest.raises(FixRequestNeeded) as failed:
        _guard().call(client.post, f"{agent.url}/jsonrpc", json=_send(), operation="SendMessage")
    assert failed.value.error is not None
    assert failed.value.error.location == f"{other.url}/jsonrpc"
    assert len(agent.requests) == 1
    assert other.requests == []
    assert json.loads(agent.requests[0].body)["method"] == "SendMessage"
