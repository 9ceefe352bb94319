"""`deduplicate` keeps callers apart, and answers a resend only when it is the first message.

Around the fake handler of tests/test_server_dedupe.py: who the caller is (a user, the
credentials presented over HTTP or gRPC, a client certificate, the app's own function), the
fingerprint a resend must match, what is kept of a Message answer, and the card's extension.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
)
from a2a.utils.errors import UnsupportedOperationError
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION, DedupeParams, read_dedupe_params
from a2a_client_errors.server import CREDENTIAL_HEADERS, caller_of, dedupe_extension, deduplicate
from a2a_client_errors.server import _dedupe as dedupe_module
from a2a_client_errors.server._dedupe import ANONYMOUS, message_fingerprint
from tests.test_server_dedupe import FakeHandler, Named, drain

# deduplicate over a2a-sdk 1.x request handlers.
pytestmark = pytest.mark.a2a_sdk("1")

SECRET = "secret-key-0123456789"


def request(
    message_id: str = "m-1",
    *,
    text: str = "hello",
    task_id: str = "",
    context_id: str = "",
    parts: list[Part] | None = None,
) -> SendMessageRequest:
    """A SendMessage request."""
    return SendMessageRequest(
        message=Message(
            message_id=message_id,
            role=Role.ROLE_USER,
            task_id=task_id,
            context_id=context_id,
            parts=parts if parts is not None else [Part(text=text)],
        )
    )


def with_headers(**headers: str) -> ServerCallContext:
    """The context a2a-sdk builds for an HTTP call with these headers (names lowercased)."""
    named = {name.replace("_", "-").lower(): value for name, value in headers.items()}
    return ServerCallContext(state={"headers": {"content-type": "application/json", **named}})


class GrpcContext:
    """What a2a-sdk puts in ``state["grpc_context"]``: metadata, and TLS's auth context."""

    def __init__(
        self, metadata: tuple[tuple[str, str | bytes], ...], certificate: bytes | None = None
    ) -> None:
        """__init__."""
        self.metadata = metadata
        self.certificate = certificate

    def invocation_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        """The call's metadata."""
        return self.metadata

    def auth_context(self) -> dict[str, list[bytes]]:
        """The auth context grpc keeps: the peer's certificate under TLS."""
        if self.certificate is None:
            return {"transport_security_type": [b"insecure"]}
        return {"transport_security_type": [b"ssl"], "x509_pem_cert": [self.certificate]}


def over_grpc(*metadata: tuple[str, str | bytes], certificate: bytes | None = None) -> Any:
    """The context a2a-sdk builds for a gRPC call."""
    return ServerCallContext(state={"grpc_context": GrpcContext(metadata, certificate)})


# --------------------------------------------------------------------------------------------
# Who the caller is
# --------------------------------------------------------------------------------------------


def test_credentials_name_a_caller_without_ever_showing_them() -> None:
    """Each credential header is a caller; the value is hashed, never kept as it was sent."""
    for name in CREDENTIAL_HEADERS:
        caller = caller_of(with_headers(**{name: SECRET}))
        assert caller is not None
        assert caller.startswith("credentials:")
        assert SECRET not in caller
    key_a = caller_of(with_headers(x_api_key="key-a"))
    assert key_a == caller_of(with_headers(x_api_key="key-a"))
    assert key_a != caller_of(with_headers(x_api_key="key-b"))
    assert key_a != caller_of(with_headers(api_key="key-a"))  # another header, another caller
    bearer = caller_of(with_headers(authorization="Bearer t"))
    assert bearer != caller_of(with_headers(authorization="Bearer t", x_api_key="k"))


def test_a_user_is_the_caller_whatever_credentials_it_shows() -> None:
    """An authenticated user is its name: a rotated token is the same caller."""
    first = ServerCallContext(user=Named("alice"), state={"headers": {"authorization": "a"}})
    later = ServerCallContext(user=Named("alice"), state={"headers": {"authorization": "b"}})
    assert caller_of(first) == caller_of(later) == "user:alice"


def test_nothing_to_tell_callers_apart_is_none() -> None:
    """No user, no credentials (or empty ones, or other headers): None."""
    assert caller_of(ServerCallContext()) is None
    assert caller_of(with_headers(x_api_key="  ", cookie="session=1")) is None
    assert caller_of(ServerCallContext(state={"headers": "not a mapping"})) is None
    assert caller_of(over_grpc(("user-agent", "grpc-python"))) is None


def test_grpc_metadata_and_client_certificates_name_callers() -> None:
    """gRPC: credential metadata, and the certificate TLS verified, each tell callers apart."""
    by_key = caller_of(over_grpc(("x-api-key", "key-a")))
    assert by_key == caller_of(with_headers(x_api_key="key-a"))  # one caller on every binding
    assert by_key != caller_of(over_grpc(("x-api-key", "key-b")))
    cert_a = caller_of(over_grpc(certificate=b"-----BEGIN CERTIFICATE-----\nA\n"))
    cert_b = caller_of(over_grpc(certificate=b"-----BEGIN CERTIFICATE-----\nB\n"))
    assert cert_a is not None
    assert cert_b is not None
    assert cert_a != cert_b
    assert caller_of(over_grpc(("authorization-bin", b"\x00\x01"))) is None  # not a name listed
    assert caller_of(over_grpc(("x-api-key", b"\x00\x01"))) is not None


def test_more_credential_headers_can_be_named() -> None:
    """``credential_headers=`` adds names; the default list stays."""
    context = with_headers(x_tenant_key="k")
    assert caller_of(context) is None
    assert caller_of(context, headers=("x-tenant-key",)) is not None


async def test_two_api_keys_are_two_callers() -> None:
    """Two callers, one messageId: two tasks, one run each; each resend gets its own task."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    alice, bob = with_headers(x_api_key="key-a"), with_headers(x_api_key="key-b")
    first_a = await handler.on_message_send(request(text="a's"), alice)
    first_b = await handler.on_message_send(request(text="b's"), bob)
    again_a = await handler.on_message_send(request(text="a's"), alice)
    again_b = await handler.on_message_send(request(text="b's"), bob)
    assert inner.runs == 2
    assert isinstance(first_a, Task)
    assert isinstance(first_b, Task)
    assert first_a.id != first_b.id
    assert isinstance(again_a, Task)
    assert again_a.id == first_a.id
    assert again_a.history[0].parts[0].text == "a's"
    assert isinstance(again_b, Task)
    assert again_b.id == first_b.id


async def test_a_squatted_message_id_never_answers_with_the_squatters_task() -> None:
    """B sends A's messageId first: A's message runs, and gets A's task."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    squatter, owner = with_headers(x_api_key="key-b"), with_headers(x_api_key="key-a")
    taken = await handler.on_message_send(request("a-1", text="b's"), squatter)
    mine = await handler.on_message_send(request("a-1", text="a's"), owner)
    assert inner.runs == 2
    assert isinstance(taken, Task)
    assert isinstance(mine, Task)
    assert mine.id != taken.id
    assert mine.history[0].parts[0].text == "a's"


async def test_callers_that_cannot_be_told_apart_share_only_the_same_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two anonymous callers are one: their two messages under one messageId run apart."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        b = await handler.on_message_send(request("a-1", text="b's"), ServerCallContext())
        a = await handler.on_message_send(request("a-1", text="a's"), ServerCallContext())
        again = await handler.on_message_send(request("a-1", text="b's"), ServerCallContext())
        await handler.on_message_send(request("a-2"), ServerCallContext())
    assert inner.runs == 3
    assert isinstance(a, Task)
    assert isinstance(b, Task)
    assert isinstance(again, Task)
    assert a.id != b.id
    assert a.history[0].parts[0].text == "a's"
    assert again.id == b.id
    assert handler.reused == 1  # a's message under b's messageId
    [warning] = [r for r in caplog.records if "no authenticated user" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    text = warning.getMessage()
    assert "no authenticated user and no credentials" in text
    assert "caller=" in text
    assert "credential_headers=" in text


async def test_the_warning_is_once_per_handler_and_only_when_needed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Callers with credentials warn nobody; each handler warns once, the first time."""
    quiet, loud, other = (deduplicate(FakeHandler()) for _ in range(3))
    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        await quiet.on_message_send(request(), with_headers(authorization="Bearer x"))
        assert caplog.records == []
        for index in range(3):
            await loud.on_message_send(request(f"m-{index}"), ServerCallContext())
        assert len(caplog.records) == 1
        await other.on_message_send(request(), ServerCallContext())
        assert len(caplog.records) == 2


async def test_an_app_names_its_callers() -> None:
    """``caller=`` decides; None from it is the anonymous caller; it excludes credential_headers."""
    inner = FakeHandler()
    seen: list[str] = []

    def by_tenant_header(context: ServerCallContext) -> str | None:
        """The app's own caller: a header its gateway sets."""
        value = context.state["headers"].get("x-caller")
        seen.append(str(value))
        return value  # type: ignore[no-any-return]

    handler = deduplicate(inner, caller=by_tenant_header)
    await handler.on_message_send(request(), with_headers(x_caller="one", x_api_key="k"))
    await handler.on_message_send(request(), with_headers(x_caller="two", x_api_key="k"))
    await handler.on_message_send(request(), with_headers(x_caller="one", x_api_key="z"))
    assert inner.runs == 2
    assert seen == ["one", "two", "one"]
    assert handler.caller is by_tenant_header
    with pytest.raises(ValueError, match="default caller only"):
        deduplicate(inner, caller=by_tenant_header, credential_headers=["x-key"])
    assert ANONYMOUS == "anonymous"


async def test_credential_headers_add_to_the_default_list() -> None:
    """An API key header of the app's own tells callers apart once named."""
    inner = FakeHandler()
    handler = deduplicate(inner, credential_headers=["X-Tenant-Key"])
    await handler.on_message_send(request(), with_headers(x_tenant_key="t-1"))
    await handler.on_message_send(request(), with_headers(x_tenant_key="t-2"))
    await handler.on_message_send(request(), with_headers(authorization="Bearer z"))
    assert inner.runs == 3


# --------------------------------------------------------------------------------------------
# A resend must be the first message
# --------------------------------------------------------------------------------------------


def test_the_fingerprint_is_task_context_and_parts() -> None:
    """Equal messages, equal fingerprints; each of taskId, contextId and parts changes it."""
    base = message_fingerprint(request().message)
    assert base == message_fingerprint(request().message)
    assert len(base.split(":")) == 3
    assert all(len(part) == 32 for part in base.split(":"))
    same = request()
    same.message.metadata.update({"trace": "x"})
    same.message.message_id = "another id"
    same.message.role = Role.ROLE_AGENT
    assert message_fingerprint(same.message) == base
    changed = [
        request(task_id="t"),
        request(context_id="c"),
        request(text="hello!"),
        request(parts=[Part(text="hello"), Part(text="")]),
        request(parts=[]),
    ]
    prints = {message_fingerprint(r.message) for r in changed}
    assert len(prints) == len(changed)
    assert base not in prints


def test_the_fingerprint_reads_parts_as_data_not_as_layout() -> None:
    """A data part's keys in another order are the same part (deterministic encoding)."""
    one = Part()
    one.data.struct_value.update({"a": 1, "b": [1, 2], "c": {"x": True}})
    two = Part()
    two.data.struct_value.update({"c": {"x": True}, "b": [1, 2], "a": 1})
    assert message_fingerprint(request(parts=[one]).message) == message_fingerprint(
        request(parts=[two]).message
    )


@given(st.text(), st.text(), st.lists(st.text(), max_size=4), st.binary(max_size=64))
def test_the_fingerprint_never_raises(
    task: str, context: str, texts: list[str], raw: bytes
) -> None:
    """Whatever the message holds, its fingerprint is three 32-digit hex digests."""
    parts = [*(Part(text=text) for text in texts), Part(raw=raw)]
    message = request(task_id=task, context_id=context, parts=parts).message
    assert [len(piece) for piece in message_fingerprint(message).split(":")] == [32, 32, 32]


async def test_other_parts_under_a_used_message_id_are_a_new_message() -> None:
    """Same caller, same messageId, other text: it runs, gets its own task, and is deduplicated.

    The A2A TCK sends several messages under one messageId; each must be served, none refused.
    """
    inner = FakeHandler()
    handler = deduplicate(inner)
    alice = with_headers(x_api_key="key-a")
    hello = await handler.on_message_send(request(text="hello"), alice)
    goodbye = await handler.on_message_send(request(text="goodbye"), alice)
    assert inner.runs == 2
    assert isinstance(hello, Task)
    assert isinstance(goodbye, Task)
    assert goodbye.id != hello.id
    assert goodbye.history[0].parts[0].text == "goodbye"
    # each one's resend, unary or streaming, is answered with its own task, never run again
    again_hello = await handler.on_message_send(request(text="hello"), alice)
    [streamed] = await drain(handler.on_message_send_stream(request(text="goodbye"), alice))
    assert isinstance(again_hello, Task)
    assert again_hello.id == hello.id
    assert isinstance(streamed, Task)
    assert streamed.id == goodbye.id
    assert inner.runs == 2


async def test_a_follow_up_that_reuses_a_message_id_reaches_its_own_task() -> None:
    """The messageId of task A sent again to task B: it runs for B; A is not its answer."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    alice = with_headers(x_api_key="key-a")
    task_a = await handler.on_message_send(request("m-1"), alice)
    task_b = await handler.on_message_send(request("m-2"), alice)
    assert isinstance(task_a, Task)
    assert isinstance(task_b, Task)
    a_before = Task()
    a_before.CopyFrom(inner.tasks[task_a.id])
    follow_up = request("m-1", task_id=task_b.id, context_id=task_b.context_id, text="more")
    answer = await handler.on_message_send(follow_up, alice)
    assert inner.runs == 3
    assert isinstance(answer, Task)
    assert answer.id != task_a.id
    assert answer.history[0].task_id == task_b.id  # what the wrapped handler was given
    assert answer.history[0].parts[0].text == "more"
    assert inner.tasks[task_a.id] == a_before
    again = await handler.on_message_send(follow_up, alice)
    assert isinstance(again, Task)
    assert again.id == answer.id
    assert inner.runs == 3


async def test_a_reused_message_id_is_counted_and_logged_without_the_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each message under a used messageId counts; the first is a WARNING, never its text."""
    handler = deduplicate(FakeHandler())
    alice, bob = with_headers(x_api_key="key-a"), with_headers(x_api_key="key-b")
    with caplog.at_level(logging.DEBUG, logger="a2a_client_errors.server"):
        await handler.on_message_send(request("m-1", text="secret one"), alice)
        await handler.on_message_send(request("m-1", text="secret one"), alice)  # a resend
        await handler.on_message_send(request("m-1", text="secret one"), bob)  # another caller
        assert handler.reused == 0
        await handler.on_message_send(request("m-1", text="secret two"), alice)
        await handler.on_message_send(request("m-1", context_id="c"), alice)
    assert handler.reused == 2
    reuses = [r for r in caplog.records if "messageId already used" in r.getMessage()]
    assert [r.levelno for r in reuses] == [logging.WARNING, logging.DEBUG]
    assert "(different parts)" in reuses[0].getMessage()
    assert "(different contextId, parts)" in reuses[1].getMessage()
    assert not any("secret" in r.getMessage() or "m-1" in r.getMessage() for r in caplog.records)


async def test_reuses_are_noticed_among_the_latest_message_ids_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The handler remembers REUSE_WINDOW messageIds: an older one reused is not counted."""
    monkeypatch.setattr(dedupe_module, "REUSE_WINDOW", 2)
    handler = deduplicate(FakeHandler())
    alice = with_headers(x_api_key="key-a")
    for message_id in ("m-1", "m-2", "m-3"):
        await handler.on_message_send(request(message_id), alice)
    await handler.on_message_send(request("m-1", text="other"), alice)  # forgotten: not counted
    await handler.on_message_send(request("m-3", text="other"), alice)
    assert handler.reused == 1


class TwoGates(FakeHandler):
    """Holds each run at a gate of its text's own; tells when a text's run has begun."""

    def __init__(self) -> None:
        """__init__."""
        super().__init__()
        self.gates: dict[str, asyncio.Event] = {}
        self.begun: dict[str, asyncio.Event] = {}

    def gate_of(self, text: str) -> asyncio.Event:
        """The gate a run of ``text`` waits at."""
        return self.gates.setdefault(text, asyncio.Event())

    def begun_of(self, text: str) -> asyncio.Event:
        """Set once a run of ``text`` has begun."""
        return self.begun.setdefault(text, asyncio.Event())

    async def on_message_send(self, params: Any, context: Any) -> Task | Message:
        """Wait at the text's gate, then make the task."""
        text = params.message.parts[0].text
        self.begun_of(text).set()
        await self.gate_of(text).wait()
        return await super().on_message_send(params, context)


async def test_a_different_message_runs_while_the_first_still_runs() -> None:
    """A different message under a running messageId is not made to wait for it, nor refused."""
    inner = TwoGates()
    handler = deduplicate(inner)
    alice = with_headers(x_api_key="key-a")
    first = asyncio.create_task(handler.on_message_send(request(text="one"), alice))
    await asyncio.wait_for(inner.begun_of("one").wait(), 10)
    inner.gate_of("two").set()
    second = await asyncio.wait_for(handler.on_message_send(request(text="two"), alice), 10)
    assert not first.done()
    inner.gate_of("one").set()
    one = await asyncio.wait_for(first, 10)
    assert isinstance(second, Task)
    assert isinstance(one, Task)
    assert second.id != one.id
    assert inner.runs == 2


async def test_the_same_message_waits_for_its_running_first_attempt() -> None:
    """A true resend while the first attempt runs waits for it and gets its task: one run."""
    inner = TwoGates()
    handler = deduplicate(inner)
    alice = with_headers(x_api_key="key-a")
    first = asyncio.create_task(handler.on_message_send(request(text="one"), alice))
    await asyncio.wait_for(inner.begun_of("one").wait(), 10)
    resend = asyncio.create_task(handler.on_message_send(request(text="one"), alice))
    inner.gate_of("one").set()
    one, again = await asyncio.wait_for(asyncio.gather(first, resend), 10)
    assert isinstance(one, Task)
    assert isinstance(again, Task)
    assert again.id == one.id
    assert inner.runs == 1


# --------------------------------------------------------------------------------------------
# Message answers: kept when small
# --------------------------------------------------------------------------------------------


async def test_a_large_message_answer_is_not_kept_and_its_resend_is_told_so() -> None:
    """Past max_message_bytes, a resend gets UnsupportedOperationError; nothing runs again."""
    inner = FakeHandler()
    inner.answer_message = True
    inner.answer_text = "x" * 2000
    handler = deduplicate(inner, max_message_bytes=1000)
    alice = with_headers(x_api_key="key-a")
    first = await handler.on_message_send(request(), alice)
    assert isinstance(first, Message)
    with pytest.raises(UnsupportedOperationError) as refused:
        await handler.on_message_send(request(), alice)
    assert "already processed" in refused.value.message
    assert "(1000 bytes)" in refused.value.message
    with pytest.raises(UnsupportedOperationError):
        await drain(handler.on_message_send_stream(request(), alice))
    assert inner.runs == 1
    inner.answer_text = "small"
    assert isinstance(await handler.on_message_send(request("m-2"), alice), Message)
    again = await handler.on_message_send(request("m-2"), alice)
    assert isinstance(again, Message)
    assert again.parts[0].text == "small"
    with pytest.raises(ValueError, match="must not be negative"):
        deduplicate(inner, max_message_bytes=-1)


# --------------------------------------------------------------------------------------------
# The card
# --------------------------------------------------------------------------------------------


def test_deduplicate_advertises_itself_in_the_card_never_as_required() -> None:
    """card=: the extension is added with the ttl, replaced if there, others left alone."""
    other = AgentExtension(uri="urn:example:other", required=True)
    card = AgentCard(name="a", capabilities=AgentCapabilities(extensions=[other]))
    deduplicate(FakeHandler(), card=card, ttl=600)
    [kept, ours] = card.capabilities.extensions
    assert kept == other
    assert ours.uri == DEDUPLICATE_EXTENSION
    assert ours.required is False
    assert read_dedupe_params(card) == DedupeParams(ttl=600.0, per_caller=True)
    deduplicate(FakeHandler(), card=card, ttl=60)  # a second wrapper: one entry, its ttl
    assert len(card.capabilities.extensions) == 2
    assert read_dedupe_params(card) == DedupeParams(ttl=60.0)
    assert dedupe_extension().params["ttl"] == 86400
    assert dedupe_extension(5).params["perCaller"] is True
