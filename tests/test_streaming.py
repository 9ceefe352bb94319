"""Reading A2A event streams over raw httpx: events yielded, errors raised, closes judged."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import (
    Action,
    CallFailed,
    DegradeNeeded,
    Delivery,
    FixRequestNeeded,
    GiveUp,
    Policy,
    Reason,
    ReconcileNeeded,
    ReportNeeded,
    RetryExhausted,
)
from a2a_client_errors._normalize import Limits, SSEParser
from a2a_client_errors._streaming import aiter_events, iter_events

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

SSE = {"content-type": "text/event-stream"}


def _task(state: str) -> dict[str, Any]:
    return {"task": {"id": "t-1", "status": {"state": state}}}


def _status(state: str) -> dict[str, Any]:
    return {"statusUpdate": {"taskId": "t-1", "status": {"state": state}}}


def _rpc(result: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result})


def _stream(*events: str, headers: dict[str, str] | None = None, status: int = 200) -> httpx.Client:
    body = "".join(events).encode()
    transport = httpx.MockTransport(
        lambda _: httpx.Response(status, headers=headers or SSE, content=body)
    )
    return httpx.Client(transport=transport)


def _read(client: httpx.Client, seen: list[Any]) -> None:
    with client.stream("POST", "http://agent.example/") as response:
        for event in iter_events(response, operation="SendStreamingMessage"):
            seen.append(event)  # noqa: PERF402 (kept one by one: an error may cut the stream)


def test_results_are_yielded_until_a_final_state() -> None:
    """JSON-RPC results are unwrapped and yielded; a terminal state ends the stream cleanly."""
    client = _stream(
        ": keep-alive\n\n",
        f"id: 1\ndata: {_rpc(_task('TASK_STATE_SUBMITTED'))}\n\n",
        f"data: {_rpc(_status('TASK_STATE_WORKING'))}\n\n",
        f"data: {_rpc(_status('TASK_STATE_FAILED'))}\n\n",
    )
    seen: list[Any] = []
    _read(client, seen)
    assert [next(iter(event)) for event in seen] == ["task", "statusUpdate", "statusUpdate"]


def test_an_interrupted_state_ends_the_stream_cleanly() -> None:
    """INPUT_REQUIRED (interrupted) is a final state for a stream too; 0.3 names are read."""
    client = _stream(f"data: {json.dumps(_status('input-required'))}\n\n")
    seen: list[Any] = []
    _read(client, seen)
    assert len(seen) == 1


def test_a_single_message_ends_the_stream_cleanly() -> None:
    """A stream answered with one Message is complete after it."""
    message = {"message": {"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}
    client = _stream(f"data: {_rpc(message)}\n\n")
    seen: list[Any] = []
    _read(client, seen)
    assert seen == [message]


def test_an_error_event_midway_raises_after_the_events_before_it() -> None:
    """A JSON-RPC error event after results: the results, then RetryExhausted (no resend)."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}}
    client = _stream(
        f"data: {_rpc(_task('TASK_STATE_WORKING'))}\n\n",
        f"event: error\ndata: {json.dumps(error)}\n\n",
    )
    seen: list[Any] = []
    with pytest.raises(RetryExhausted) as failed:
        _read(client, seen)
    assert len(seen) == 1
    assert failed.value.decision.give_up is GiveUp.STREAM_STARTED
    assert failed.value.decision.reason is Reason.INTERNAL_ERROR


@pytest.mark.parametrize("event_line", ["event: error\n", ""], ids=["named", "unnamed"])
def test_a_status_error_event_raises_its_decision(event_line: str) -> None:
    """An HTTP+JSON ``{"error": ...}`` event, named or not, raises by its reason."""
    error = {
        "error": {
            "code": 400,
            "status": "FAILED_PRECONDITION",
            "message": "no",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "UNSUPPORTED_OPERATION",
                    "domain": "a2a-protocol.org",
                }
            ],
        }
    }
    client = _stream(f"{event_line}data: {json.dumps(error)}\n\n")
    with pytest.raises(DegradeNeeded) as failed:
        _read(client, [])
    assert failed.value.decision.give_up is None  # before the first event: a plain decision


def test_an_error_before_any_event_is_a_plain_decision() -> None:
    """A retryable error as the very first event keeps no give-up: nothing was delivered."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}}
    client = _stream(f"data: {json.dumps(error)}\n\n")
    with pytest.raises(RetryExhausted) as failed:
        _read(client, [])
    assert failed.value.decision.give_up is None
    assert failed.value.decision.action is Action.RETRY


@pytest.mark.parametrize(
    ("operation", "failure", "reason"),
    [
        ("SendStreamingMessage", ReconcileNeeded, Reason.TASK_GENERATION_MISMATCH),
        ("SubscribeToTask", FixRequestNeeded, Reason.EXTENSION_SUPPORT_REQUIRED),
    ],
)
def test_a_bare_minus_32010_event_is_a_mismatch_only_on_a_send(
    operation: str, failure: type[CallFailed], reason: Reason
) -> None:
    """Draft 1.1's -32010 answers only a send; on a subscription it is crewai's extension."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32010, "message": "m"}}
    client = _stream(f"data: {json.dumps(error)}\n\n")
    with (
        client.stream("POST", "http://agent.example/") as response,
        pytest.raises(failure) as failed,
    ):
        list(iter_events(response, operation=operation))
    assert failed.value.decision.reason is reason


def test_a_close_before_a_final_state_is_an_interruption() -> None:
    """A stream that ends while the task works is interrupted, not done."""
    client = _stream(f"data: {_rpc(_task('TASK_STATE_WORKING'))}")  # no blank line at the end
    seen: list[Any] = []
    with pytest.raises(RetryExhausted) as failed:
        _read(client, seen)
    assert len(seen) == 1
    assert failed.value.decision.give_up is GiveUp.STREAM_STARTED
    assert failed.value.decision.error is not None
    assert "closed" in failed.value.decision.error.message


class _Cut(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that yields ``chunks`` and then breaks off as a reset connection does."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        raise httpx.RemoteProtocolError("peer closed connection without a complete body")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        raise httpx.ReadTimeout("timed out")


def _cut(*chunks: bytes) -> httpx.MockTransport:
    return httpx.MockTransport(lambda _: httpx.Response(200, headers=SSE, stream=_Cut(*chunks)))


def test_a_stream_cut_after_an_event_is_an_interruption() -> None:
    """A reset after the task's first event: resume it, never resend (STREAM_STARTED)."""
    seen: list[Any] = []
    first = f"data: {_rpc(_task('TASK_STATE_WORKING'))}\n\n".encode()
    with pytest.raises(RetryExhausted) as raised:
        _read(httpx.Client(transport=_cut(first)), seen)
    assert seen == [_task("TASK_STATE_WORKING")]
    assert raised.value.decision.give_up is GiveUp.STREAM_STARTED
    assert raised.value.decision.error is not None
    assert raised.value.decision.error.exception == "httpx.RemoteProtocolError"
    assert isinstance(raised.value.__cause__, httpx.RemoteProtocolError)


def test_a_stream_cut_before_its_first_event_is_the_transport_failure_judged() -> None:
    """A reset before any event: the failure's own decision, the send's outcome unknown."""
    seen: list[Any] = []
    with pytest.raises(RetryExhausted) as raised:
        _read(httpx.Client(transport=_cut(b'data: {"jsonrpc"')), seen)
    assert seen == []
    assert raised.value.decision.give_up is None
    assert raised.value.decision.error is not None
    assert raised.value.decision.error.delivery is Delivery.UNKNOWN


async def test_an_async_stream_cut_after_an_event_is_an_interruption() -> None:
    """The async reader: a read timeout after the first event is an interruption too."""
    seen: list[Any] = []
    first = f"data: {_rpc(_task('TASK_STATE_WORKING'))}\n\n".encode()

    async def read(client: httpx.AsyncClient) -> None:
        async with client.stream("POST", "http://agent.example/") as response:
            async for event in aiter_events(response, operation="SendStreamingMessage"):
                seen.append(event)  # noqa: PERF401 (kept one by one: the stream breaks)

    async with httpx.AsyncClient(transport=_cut(first)) as client:
        with pytest.raises(RetryExhausted) as raised:
            await read(client)
    assert seen == [_task("TASK_STATE_WORKING")]
    assert raised.value.decision.give_up is GiveUp.STREAM_STARTED


def test_non_json_data_is_invalid_agent_response() -> None:
    """An event whose data is not JSON is the peer breaking the contract."""
    client = _stream("data: {not json\n\n")
    with pytest.raises(ReportNeeded) as failed:
        _read(client, [])
    assert failed.value.decision.reason is Reason.INVALID_AGENT_RESPONSE


def test_an_error_event_without_an_error_is_invalid() -> None:
    """``event: error`` whose data carries no error is still a broken stream."""
    client = _stream('event: error\ndata: {"hello": 1}\n\n')
    with pytest.raises(ReportNeeded):
        _read(client, [])


def test_a_plain_error_response_instead_of_a_stream_is_judged_whole() -> None:
    """A JSON error body where a stream was expected raises its decision at once."""
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}
    client = _stream(json.dumps(body), headers={"content-type": "application/json"})
    with pytest.raises(ReconcileNeeded):
        _read(client, [])


def test_a_policy_override_applies_to_events() -> None:
    """The policy given decides about error events."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}
    client = _stream(f"data: {json.dumps(error)}\n\n")
    policy = Policy().with_action(Reason.TASK_NOT_FOUND, Action.DEGRADE)
    with (
        client.stream("POST", "http://agent.example/") as response,
        pytest.raises(DegradeNeeded),
    ):
        list(iter_events(response, policy=policy))


async def test_the_async_reader_matches_the_sync_one() -> None:
    """aiter_events yields the same events and raises the same way."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}}
    body = (
        f"data: {_rpc(_task('TASK_STATE_WORKING'))}\n\nevent: error\ndata: {json.dumps(error)}\n\n"
    ).encode()
    transport = httpx.MockTransport(lambda _: httpx.Response(200, headers=SSE, content=body))
    seen: list[Any] = []

    async def read() -> None:
        async with (
            httpx.AsyncClient(transport=transport) as client,
            client.stream("POST", "http://agent.example/") as response,
        ):
            async for event in aiter_events(response):
                seen.append(event)  # noqa: PERF401 (the events before the error are the point)

    with pytest.raises(RetryExhausted):
        await read()
    assert len(seen) == 1


async def test_the_async_reader_judges_a_plain_response() -> None:
    """aiter_events judges a non-stream response whole, as the sync reader does."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}})
    transport = httpx.MockTransport(lambda _: httpx.Response(200, content=body.encode()))
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", "http://agent.example/") as response,
    ):
        with pytest.raises(ReconcileNeeded):
            async for _ in aiter_events(response):
                pass


SEPARATORS = "\u2028\u2029\x85"


def _message_event(text: str) -> str:
    message = {"message": {"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"text": text}]}}
    # As a2a-sdk writes it: raw non-ASCII text, not \u escapes.
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "result": message}, ensure_ascii=False)
    return f"data: {payload}\r\n\r\n"


def test_a_valid_stream_holding_unicode_line_separators_is_delivered() -> None:
    """U+2028, U+2029 and U+0085 in a message do not split its line: the event arrives whole."""
    seen: list[Any] = []
    _read(_stream(_message_event(f"one{SEPARATORS}two")), seen)
    assert seen[0]["message"]["parts"][0]["text"] == f"one{SEPARATORS}two"


async def test_a_valid_async_stream_holding_unicode_line_separators_is_delivered() -> None:
    """The async reader reads the same stream the same way."""
    body = _message_event(f"one{SEPARATORS}two").encode()
    transport = httpx.MockTransport(lambda _: httpx.Response(200, headers=SSE, content=body))
    seen: list[Any] = []
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", "http://agent.example/") as response,
    ):
        seen.extend([event async for event in aiter_events(response)])
    assert seen[0]["message"]["parts"][0]["text"] == f"one{SEPARATORS}two"


def test_a_record_separator_before_the_payload_is_read_past() -> None:
    """A peer that prefixes each data payload with RS (RFC 7464) is read as JSON."""
    seen: list[Any] = []
    _read(_stream(f"data: \x1e{_rpc(_task('TASK_STATE_COMPLETED'))}\n\n"), seen)
    assert seen == [_task("TASK_STATE_COMPLETED")]


def _endless_event(chunks: int) -> httpx.Client:
    def body() -> Iterator[bytes]:
        yield b"data: "
        for _ in range(chunks):
            yield b"x" * 1024

    transport = httpx.MockTransport(lambda _: httpx.Response(200, headers=SSE, content=body()))
    return httpx.Client(transport=transport)


def test_an_event_that_never_ends_is_stopped_at_its_cap() -> None:
    """An unfinished event past max_sse_event is INVALID_AGENT_RESPONSE: memory stays bounded."""
    policy = Policy(limits=Limits(max_sse_line=64 * 1024, max_sse_event=64 * 1024))
    with (
        _endless_event(10_000) as client,
        client.stream("POST", "http://agent.example/") as response,
        pytest.raises(ReportNeeded) as caught,
    ):
        for _ in iter_events(response, policy=policy):
            pass
    assert caught.value.decision.reason is Reason.INVALID_AGENT_RESPONSE
    assert "longer than 65536" in str(caught.value.decision.error.message)


def test_a_stream_past_its_byte_cap_is_stopped() -> None:
    """max_sse_stream bounds the bytes iter_events reads, however small its events."""
    event = f"data: {_rpc(_status('TASK_STATE_WORKING'))}\n\n"
    policy = Policy(limits=Limits(max_sse_stream=len(event) * 3))
    seen: list[Any] = []
    with (
        _stream(*[event] * 10) as client,
        client.stream("POST", "http://agent.example/") as response,
        pytest.raises(ReportNeeded),
    ):
        seen.extend(iter_events(response, policy=policy))
    assert len(seen) <= 3


def test_a_stream_that_is_not_utf8_is_an_invalid_answer() -> None:
    """Bytes that are not UTF-8 stop the stream with INVALID_AGENT_RESPONSE."""
    transport = httpx.MockTransport(
        lambda _: httpx.Response(200, headers=SSE, content=b"data: \xff\n\n")
    )
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", "http://agent.example/") as response,
        pytest.raises(ReportNeeded),
    ):
        list(iter_events(response))


def test_the_sse_parser_joins_lines_and_skips_the_rest() -> None:
    """Multi-line data is joined; comments, ids and retries are skipped; end flushes."""
    parser = SSEParser()
    lines = [": comment", "id: 7", "retry: 100", "event: update", "data: a", "data:b", ""]
    assert [parser.feed(line) for line in lines][-1] == ("update", "a\nb")
    assert parser.feed("data: tail") is None
    assert parser.end() == ("", "tail")
    assert parser.end() is None
