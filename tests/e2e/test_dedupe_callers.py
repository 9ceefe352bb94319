"""`deduplicate` on a real a2a-sdk agent: callers apart, a resend held to the first message.

`EmbeddedPeer(deduplicate=True)` serves JSON-RPC, HTTP+JSON and gRPC on 127.0.0.1; every
request has a timeout, and every server is stopped by its fixture. The tasks the agent made
are counted in its task store (`EmbeddedPeer.task_ids`), whatever its clients saw. A gRPC
server with mutual TLS (certificates made here, for 127.0.0.1) shows client certificates
telling callers apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import uuid
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.server.request_handlers import GrpcHandler
from a2a.types import a2a_pb2, a2a_pb2_grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a_client_errors import Reason, normalize
from a2a_client_errors._dedupe_card import DedupeParams, read_dedupe_params
from a2a_client_errors.testing.peer import EmbeddedPeer
from tests.dedupe_worker import build_agent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0
BINDINGS = ("jsonrpc", "http+json", "grpc")


@pytest.fixture(scope="module")
def agent() -> Iterator[EmbeddedPeer]:
    """A deduplicating a2a-sdk agent on the three bindings."""
    with EmbeddedPeer(deduplicate=True) as running:
        yield running


def message(
    message_id: str, text: str, *, task_id: str = "", context_id: str = ""
) -> dict[str, Any]:
    """A user message, as JSON."""
    found: dict[str, Any] = {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        found["taskId"] = task_id
    if context_id:
        found["contextId"] = context_id
    return found


def send(peer: EmbeddedPeer, binding: str, sent: dict[str, Any], key: str | None) -> Any:
    """SendMessage over one binding: the result as JSON, or what `normalize` makes of the error."""
    headers = {"A2A-Version": "1.0", **({"X-API-Key": key} if key else {})}
    if binding == "grpc":
        request = a2a_pb2.SendMessageRequest()
        request.message.CopyFrom(_message_proto(sent))
        with grpc.insecure_channel(peer.grpc_target) as channel:
            stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                answer = stub.SendMessage(
                    request, metadata=[(k.lower(), v) for k, v in headers.items()], timeout=TIMEOUT
                )
            except grpc.RpcError as exc:
                return normalize(exc)
        return MessageToDict(answer)
    with httpx.Client(timeout=TIMEOUT, headers=headers) as client:
        if binding == "jsonrpc":
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": sent}}
            response = client.post(peer.jsonrpc_url, json=body)
            payload = response.json()
            return payload["result"] if "result" in payload else normalize(response)
        response = client.post(peer.rest_url + "/message:send", json={"message": sent})
        return response.json() if response.status_code == 200 else normalize(response)


def _message_proto(sent: dict[str, Any]) -> a2a_pb2.Message:
    """The JSON message as the protobuf message."""
    return ParseDict(sent, a2a_pb2.Message())


def task_of(answer: Any) -> dict[str, Any]:
    """The task of a SendMessage result (fails the test on anything else)."""
    assert isinstance(answer, dict), answer
    task: dict[str, Any] = answer["task"]
    return task


def new_id() -> str:
    """A messageId of this test's own."""
    return f"m-{uuid.uuid4()}"


@pytest.mark.parametrize("binding", BINDINGS)
def test_two_api_keys_are_two_callers(agent: EmbeddedPeer, binding: str) -> None:
    """One messageId from two keys: a task each, one run each; each resend gets its own task."""
    before = len(agent.task_ids())
    shared = new_id()
    first_a = task_of(send(agent, binding, message(shared, "from a"), "key-a"))
    first_b = task_of(send(agent, binding, message(shared, "from b"), "key-b"))
    again_a = task_of(send(agent, binding, message(shared, "from a"), "key-a"))
    again_b = task_of(send(agent, binding, message(shared, "from b"), "key-b"))
    assert first_a["id"] != first_b["id"]
    assert again_a["id"] == first_a["id"]
    assert again_b["id"] == first_b["id"]
    assert again_a["history"][0]["parts"][0]["text"] == "from a"
    assert len(agent.task_ids()) == before + 2


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_squatted_message_id_never_gives_the_owner_the_squatters_task(
    agent: EmbeddedPeer, binding: str
) -> None:
    """B sends A's messageId first: A's message still runs, and A gets its own task."""
    before = len(agent.task_ids())
    shared = new_id()
    squatted = task_of(send(agent, binding, message(shared, "b was first"), "key-b"))
    owned = task_of(send(agent, binding, message(shared, "a's own"), "key-a"))
    assert owned["id"] != squatted["id"]
    assert owned["history"][0]["parts"][0]["text"] == "a's own"
    assert len(agent.task_ids()) == before + 2


@pytest.mark.parametrize("binding", BINDINGS)
def test_other_parts_under_a_used_message_id_are_a_new_message(
    agent: EmbeddedPeer, binding: str
) -> None:
    """The same caller, the same messageId, other text: a second task; each resend its own."""
    before = len(agent.task_ids())
    shared = new_id()
    hello = task_of(send(agent, binding, message(shared, "hello"), "key-a"))
    goodbye = task_of(send(agent, binding, message(shared, "goodbye"), "key-a"))
    assert goodbye["id"] != hello["id"]
    assert goodbye["history"][0]["parts"][0]["text"] == "goodbye"
    assert task_of(send(agent, binding, message(shared, "hello"), "key-a"))["id"] == hello["id"]
    assert task_of(send(agent, binding, message(shared, "goodbye"), "key-a"))["id"] == goodbye["id"]
    assert len(agent.task_ids()) == before + 2


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_follow_up_that_reuses_a_message_id_reaches_task_b(
    agent: EmbeddedPeer, binding: str
) -> None:
    """Task A's messageId sent again as a follow-up to task B: the agent answers it for B.

    B is completed, so a2a-sdk refuses a follow-up to it (UNSUPPORTED_OPERATION), as it does
    without `deduplicate`: the message reached the agent, and was not answered with task A.
    """
    reused = new_id()
    task_a = task_of(send(agent, binding, message(reused, "task a"), "key-a"))
    task_b = task_of(send(agent, binding, message(new_id(), "task b"), "key-a"))
    before = len(agent.task_ids())
    follow_up = message(reused, "more for b", task_id=task_b["id"], context_id=task_b["contextId"])
    answer = send(agent, binding, follow_up, "key-a")
    assert not isinstance(answer, dict), answer
    assert answer.reason is Reason.UNSUPPORTED_OPERATION
    assert len(agent.task_ids()) == before
    with httpx.Client(timeout=TIMEOUT, headers={"A2A-Version": "1.0"}) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_a["id"]}}
        a_now = client.post(agent.jsonrpc_url, json=body).json()["result"]
    assert len(a_now["history"]) == len(task_a["history"])


def test_callers_that_cannot_be_told_apart_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    """No user, no credentials, on every binding: the agent works, and warns once."""
    with (
        caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"),
        EmbeddedPeer(deduplicate=True, dedupe_options={"ttl": 120}) as anonymous,
    ):
        assert read_dedupe_params(anonymous.agent_card) == DedupeParams(ttl=120.0)
        for binding in BINDINGS:
            sent = message(new_id(), "nobody")
            first = task_of(send(anonymous, binding, sent, None))
            assert task_of(send(anonymous, binding, sent, None))["id"] == first["id"]
        assert len(anonymous.task_ids()) == len(BINDINGS)
    warnings = [r for r in caplog.records if "no authenticated user" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


def test_the_served_card_advertises_deduplication(agent: EmbeddedPeer) -> None:
    """The card at /.well-known (JSON) and the card object (protobuf) read the same."""
    served = httpx.get(agent.card_url, timeout=TIMEOUT).json()
    [entry] = [
        e
        for e in served["capabilities"]["extensions"]
        if e["uri"] == "urn:a2a-client-errors:ext:deduplicate:v1"
    ]
    assert entry.get("required", False) is False
    assert read_dedupe_params(served) == DedupeParams(ttl=86400.0, per_caller=True)
    assert read_dedupe_params(agent.agent_card) == DedupeParams(ttl=86400.0, per_caller=True)


# --------------------------------------------------------------------------------------------
# Client certificates (gRPC over mutual TLS)
# --------------------------------------------------------------------------------------------


def _certificate(
    name: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[x509.Name, Any] | None
) -> x509.Certificate:
    """A certificate for ``name`` (the CA's own when ``issuer`` is None), valid for a day."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_name, signer_key = issuer if issuer is not None else (subject, key)
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(signer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if name == "127.0.0.1":
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(name))]),
            critical=False,
        )
    return builder.sign(signer_key, hashes.SHA256())


def _pem(certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> tuple[bytes, bytes]:
    """The certificate and its key, in PEM."""
    return certificate.public_bytes(serialization.Encoding.PEM), key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@contextlib.asynccontextmanager
async def mtls_agent() -> AsyncIterator[tuple[Any, str, bytes, dict[str, tuple[bytes, bytes]]]]:
    """A deduplicating agent on gRPC with mutual TLS: (agent, target, CA, client credentials)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("test ca", ca_key, None)
    issuer = (ca.subject, ca_key)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _pem(_certificate("127.0.0.1", server_key, issuer), server_key)
    clients = {}
    for name in ("client a", "client b"):
        key = ec.generate_private_key(ec.SECP256R1())
        clients[name] = _pem(_certificate(name, key, issuer), key)
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    built = build_agent()
    grpc_server = grpc.aio.server()
    credentials = grpc.ssl_server_credentials(
        [(server[1], server[0])], root_certificates=ca_pem, require_client_auth=True
    )
    port = grpc_server.add_secure_port("127.0.0.1:0", credentials)
    stubs: Any = a2a_pb2_grpc
    stubs.add_A2AServiceServicer_to_server(GrpcHandler(built.handler), grpc_server)
    await grpc_server.start()
    try:
        yield built, f"127.0.0.1:{port}", ca_pem, clients
    finally:
        await asyncio.wait_for(grpc_server.stop(0.5), 5)
        await asyncio.wait_for(built.handler.aclose(), 5)


async def test_client_certificates_are_callers(caplog: pytest.LogCaptureFixture) -> None:
    """Two client certificates, no user, no key: two callers; a certificate's resend deduped."""

    async def send_as(
        target: str, ca: bytes, client: tuple[bytes, bytes], text: str
    ) -> a2a_pb2.SendMessageResponse:
        credentials = grpc.ssl_channel_credentials(ca, client[1], client[0])
        async with grpc.aio.secure_channel(target, credentials) as channel:
            stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
            request = a2a_pb2.SendMessageRequest(
                message=a2a_pb2.Message(
                    message_id="m-cert",
                    role=a2a_pb2.Role.ROLE_USER,
                    parts=[a2a_pb2.Part(text=text)],
                )
            )
            answer: a2a_pb2.SendMessageResponse = await stub.SendMessage(
                request, metadata=[("a2a-version", "1.0")], timeout=TIMEOUT
            )
            return answer

    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        async with mtls_agent() as (built, target, ca, clients):
            first_a = await send_as(target, ca, clients["client a"], "a")
            first_b = await send_as(target, ca, clients["client b"], "b")
            again_a = await send_as(target, ca, clients["client a"], "a")
            assert first_a.task.id != first_b.task.id
            assert again_a.task.id == first_a.task.id
            assert built.executor.runs == 2
    assert not [r for r in caplog.records if "no authenticated user" in r.getMessage()]
