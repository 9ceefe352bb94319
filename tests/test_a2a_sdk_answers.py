"""guard_client judges what the agent sent, not what a2a-sdk's client kept of it (both lines).

Test agents of ours, real HTTP servers on 127.0.0.1, answer with the bytes of servers written
elsewhere; the client is a2a-sdk's own (``ClientFactory(config).create(card)``, the installed
line: 1.x or 0.3), wrapped by `guard_client` with a plain ``Guard()`` and no transport of ours
under its httpx client:

* a2a-go 2.3.1's refused HTTP+JSON stream (``200 text/event-stream`` whose one event is a
  ``google.rpc.Status``, `a2a_go_rest_stream_error`): a2a-sdk 1.3 reads it as one empty event;
  the door reads the bytes: `DegradeNeeded` (UNSUPPORTED_OPERATION), and with the default
  handlers the message is sent again without streaming;
* a2a-go's JSON-RPC -31401 / -31403 on HTTP 200 (`A2A_GO_UNAUTHENTICATED_CODE`,
  `A2A_GO_UNAUTHORIZED_CODE`), to a send (unary and streaming) and to GetTask: `AuthFailed`;
* a2a-java 1.2.0.Final answering a stream with JSON-RPC -32600 (ErrorInfo INVALID_REQUEST, on
  HTTP 200) when its card says it does not stream (protocol notes §16), to a client holding a
  card that claims streaming: the card is read again once, and the refusal degrades when the
  fresh card drops streaming; it stands as the agent said it when the card still claims it.

Each call is one record (``on_call``), however the answer was read. Sleeps go nowhere.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2a_client_errors import (
    Action,
    AuthFailed,
    CallFailed,
    DegradeNeeded,
    FixRequestNeeded,
    Guard,
    Reason,
)
from a2a_client_errors.integrations.a2a_sdk import guard_client, guarded_factory
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.types import SentMessage, Source
from tests.asgi import serve
from tests.dialects import (
    A2A_GO_UNAUTHENTICATED_CODE,
    A2A_GO_UNAUTHORIZED_CODE,
    a2a_go_rest_stream_error,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from starlette.requests import Request

    from a2a_client_errors.hooks import TaskOutcomeEvent

try:
    from a2a.types import a2a_pb2
except ImportError:  # a2a-sdk 0.3
    a2a_pb2 = None

pytestmark = pytest.mark.a2a_sdk("0.3", "1")  # either line; none: left out

ONE = a2a_pb2 is not None
CARD_PATH = "/.well-known/agent-card.json"
REST_STREAM = "/message:stream" if ONE else "/v1/message:stream"
METHODS = (
    {
        "stream": "SendStreamingMessage",
        "send": "SendMessage",
        "get": "GetTask",
        "subscribe": "SubscribeToTask",
    }
    if ONE
    else {
        "stream": "message/stream",
        "send": "message/send",
        "get": "tasks/get",
        "subscribe": "tasks/resubscribe",
    }
)
TASK_ID = "t-1"


# --- the installed line's objects -------------------------------------------------------------


def _card(url: str, binding: str, *, streaming: bool = True) -> Any:
    """The agent's card, one interface, in the installed line's types."""
    if ONE:
        interface = a2a_pb2.AgentInterface(
            url=url, protocol_binding=binding, protocol_version="1.0"
        )
        return a2a_pb2.AgentCard(
            name="agent",
            version="1",
            supported_interfaces=[interface],
            capabilities=a2a_pb2.AgentCapabilities(streaming=streaming),
        )
    from a2a.types import AgentCapabilities, AgentCard

    return AgentCard(
        name="agent",
        description="a test agent",
        url=url,
        version="1",
        preferred_transport=binding,
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
    )


def _card_json(url: str, binding: str, *, streaming: bool) -> dict[str, Any]:
    """The card as the agent serves it at the well-known path."""
    card = _card(url, binding, streaming=streaming)
    if ONE:
        from google.protobuf import json_format

        found: dict[str, Any] = json_format.MessageToDict(card)
        return found
    dumped: dict[str, Any] = card.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _config(http: httpx.AsyncClient, binding: str, *, streaming: bool = True) -> Any:
    from a2a.client import ClientConfig

    if ONE:
        return ClientConfig(
            streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
        )
    from a2a.types import TransportProtocol

    return ClientConfig(
        streaming=streaming, httpx_client=http, supported_transports=[TransportProtocol(binding)]
    )


def _send_request(message_id: str = "m-1", metadata: dict[str, str] | None = None) -> Any:
    """What ``send_message`` takes: 1.x a ``SendMessageRequest``, 0.3 a ``Message``."""
    if ONE:
        message = a2a_pb2.Message(
            message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hi")]
        )
        if metadata:
            message.metadata.update(metadata)
        return a2a_pb2.SendMessageRequest(message=message)
    from a2a.types import Message, Part, Role, TextPart

    return Message(
        role=Role.user,
        message_id=message_id,
        parts=[Part(root=TextPart(text="hi"))],
        metadata=metadata,
    )


def _get_request() -> Any:
    if ONE:
        return a2a_pb2.GetTaskRequest(id=TASK_ID)
    from a2a.types import TaskQueryParams

    return TaskQueryParams(id=TASK_ID)


def _client(url: str, http: httpx.AsyncClient, binding: str, guard: Guard, **options: Any) -> Any:
    """a2a-sdk's own client for the agent's card, wrapped by guard_client: nothing else."""
    from a2a.client import ClientFactory

    client = ClientFactory(_config(http, binding)).create(_card(url, binding))
    return guard_client(client, guard, **options)


def _guard(hook: RecordingHook | None = None) -> Guard:
    return Guard(sleep=lambda _: None, hooks=[hook] if hook is not None else [])


async def _drain(client: Any, request: Any) -> list[Any]:
    return [event async for event in client.send_message(request)]


# --- the agents -------------------------------------------------------------------------------


def _task(state: str = "completed") -> dict[str, Any]:
    """A task in the installed line's JSON (1.0 or 0.3 enum spelling)."""
    if ONE:
        return {
            "id": TASK_ID,
            "contextId": "c-1",
            "status": {"state": f"TASK_STATE_{state.upper()}"},
        }
    return {"id": TASK_ID, "contextId": "c-1", "kind": "task", "status": {"state": state}}


def _jsonrpc_result(rpc: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success: the task (a send's 1.0 answer wraps it as ``{"task": ...}``)."""
    result = {"task": _task()} if ONE and rpc["method"] != METHODS["get"] else _task()
    return {"jsonrpc": "2.0", "id": rpc.get("id"), "result": result}


class Agent:
    """An agent of ours on 127.0.0.1 that answers as a foreign server does; counts requests.

    Attributes:
        url: its base URL, once started (`serving`).
        card_reads: how many times its card was read.
        sends: how many non-streaming sends it served.
    """

    def __init__(self) -> None:
        self.url = ""
        self.card_reads = 0
        self.sends = 0
        self.card_streams = False  # what the card it serves says
        self.refuse_code = 0  # the JSON-RPC code every call is refused with (0: none)
        self.send_code = 0  # the JSON-RPC code a unary send is refused with (0: none)
        self.internal_streams = False  # streams refused with -32603, as a2a-sdk 0.3 agents do
        self.card_served = True  # False: the card's path answers 404

    def app(self) -> Starlette:
        """Its routes: JSON-RPC at ``/jsonrpc``, a2a-go's refused stream, and the card."""
        return Starlette(
            routes=[
                Route("/jsonrpc", self._jsonrpc, methods=["POST"]),
                Route("/plain/jsonrpc", self._plain, methods=["POST"]),
                Route(REST_STREAM, self._rest_stream, methods=["POST"]),
                Route(
                    "/message:send" if ONE else "/v1/message:send",
                    self._rest_send,
                    methods=["POST"],
                ),
                Route(CARD_PATH, self._card, methods=["GET"]),
            ]
        )

    async def _card(self, request: Request) -> Response:
        self.card_reads += 1
        if not self.card_served:
            return Response(b"404 page not found\n", status_code=404, media_type="text/plain")
        return JSONResponse(
            _card_json(self.url + "/jsonrpc", "JSONRPC", streaming=self.card_streams)
        )

    async def _rest_stream(self, request: Request) -> Response:
        """a2a-go 2.3.1: the stream opens, and its one event is the error (no event name)."""
        return Response(a2a_go_rest_stream_error(), media_type="text/event-stream")

    async def _rest_send(self, request: Request) -> Response:
        self.sends += 1
        # HTTP+JSON is protobuf JSON on both lines (0.3's REST binding too).
        task = {"id": TASK_ID, "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}
        return JSONResponse({"task": task})

    async def _plain(self, request: Request) -> Response:
        """Another agent on the same origin that answers every call with its task."""
        return JSONResponse(_jsonrpc_result(json.loads(await request.body())))

    async def _jsonrpc(self, request: Request) -> Response:
        rpc = json.loads(await request.body())
        if self.internal_streams and rpc["method"] in {METHODS["stream"], METHODS["subscribe"]}:
            error = {"code": -32603, "message": "Internal error"}
            return JSONResponse({"jsonrpc": "2.0", "id": rpc.get("id"), "error": error})
        if self.refuse_code == _JAVA_INVALID_REQUEST and rpc["method"] == METHODS["stream"]:
            return JSONResponse(_java_invalid_request(rpc.get("id")))
        if self.refuse_code and self.refuse_code != _JAVA_INVALID_REQUEST:
            # a2a-go: its auth codes on HTTP 200, as a JSON body (a stream's too).
            error = {"code": self.refuse_code, "message": "unauthenticated"}
            return JSONResponse({"jsonrpc": "2.0", "id": rpc.get("id"), "error": error})
        if rpc["method"] == METHODS["send"]:
            self.sends += 1
            if self.send_code:
                error = {"code": self.send_code, "message": "unauthenticated"}
                return JSONResponse({"jsonrpc": "2.0", "id": rpc.get("id"), "error": error})
        answer = _jsonrpc_result(rpc)
        if rpc["method"] == METHODS["stream"]:
            return Response(f"data: {json.dumps(answer)}\n\n", media_type="text/event-stream")
        return JSONResponse(answer)


_JAVA_INVALID_REQUEST = -32600


def _java_invalid_request(rpc_id: object) -> dict[str, Any]:
    """a2a-java 1.2.0.Final's answer to a stream its card does not offer: InvalidRequest.

    ``-32600`` with an ErrorInfo of the A2A domain, reason INVALID_REQUEST and empty metadata
    (protocol notes §16), on HTTP 200.
    """
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "INVALID_REQUEST",
        "domain": "a2a-protocol.org",
        "metadata": {},
    }
    error = {"code": _JAVA_INVALID_REQUEST, "message": "Streaming is not supported", "data": [info]}
    return {"jsonrpc": "2.0", "id": rpc_id, "error": error}


@pytest.fixture(name="agent")
def agent_fixture() -> Iterator[Agent]:
    """One agent of ours on 127.0.0.1, stopped after the test."""
    agent = Agent()
    with serve(agent.app()) as url:
        agent.url = url
        yield agent


# --- a2a-go's refused HTTP+JSON stream --------------------------------------------------------


async def test_go_refused_rest_stream_degrades(agent: Agent) -> None:
    """a2a-go's refused stream through a2a-sdk's REST client alone: DegradeNeeded, one call."""
    hook = RecordingHook()
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url, http, "HTTP+JSON", _guard(hook), handlers=None)
        assert client.reads_answers
        with pytest.raises(DegradeNeeded) as failed:
            await _drain(client, _send_request())
    decision = failed.value.decision
    assert (decision.action, decision.reason) == (Action.DEGRADE, Reason.UNSUPPORTED_OPERATION)
    assert len(hook.calls) == 1  # one call, one record


async def test_go_refused_rest_stream_is_sent_again_without_streaming(agent: Agent) -> None:
    """With the default handlers the degrade is carried out: the message goes unary, once."""
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url, http, "HTTP+JSON", _guard())
        events = await _drain(client, _send_request())
    assert events  # the answer of the send made without streaming
    assert agent.sends == 1


# --- a2a-go's JSON-RPC auth codes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (A2A_GO_UNAUTHENTICATED_CODE, Reason.UNAUTHENTICATED),
        (A2A_GO_UNAUTHORIZED_CODE, Reason.UNAUTHORIZED),
    ],
)
@pytest.mark.parametrize("operation", ["stream", "send", "get"])
async def test_go_auth_codes_are_auth(
    agent: Agent, code: int, reason: Reason, operation: str
) -> None:
    """-31401 / -31403 on HTTP 200, to a stream, a unary send and GetTask: AuthFailed, once."""
    agent.refuse_code = code
    hook = RecordingHook()
    async with httpx.AsyncClient(timeout=10) as http:
        from a2a.client import ClientFactory

        config = _config(http, "JSONRPC", streaming=operation == "stream")
        sdk_client = ClientFactory(config).create(_card(agent.url + "/jsonrpc", "JSONRPC"))
        client = guard_client(sdk_client, _guard(hook), handlers=None)
        call = (
            client.get_task(_get_request())
            if operation == "get"
            else _drain(client, _send_request())
        )
        with pytest.raises(AuthFailed) as failed:
            await call
    decision = failed.value.decision
    assert (decision.action, decision.reason) == (Action.AUTH, reason)
    assert decision.error is not None
    assert decision.error.jsonrpc_code == code
    assert len(hook.calls) == 1


async def test_guarded_factory_reads_the_bytes_too(agent: Agent) -> None:
    """A client guarded_factory creates (no transport of ours mounted): -31401 is auth."""
    agent.refuse_code = A2A_GO_UNAUTHENTICATED_CODE
    async with httpx.AsyncClient(timeout=10) as http:
        factory = guarded_factory(_config(http, "JSONRPC"), _guard(), handlers=None)
        client = factory.create(_card(agent.url + "/jsonrpc", "JSONRPC"))
        with pytest.raises(AuthFailed):
            await _drain(client, _send_request())


async def test_outside_a_guarded_call_the_httpx_client_answers_as_before(agent: Agent) -> None:
    """The hook reads nothing when no guarded call is in flight: the body is the agent's."""
    agent.refuse_code = A2A_GO_UNAUTHENTICATED_CODE
    async with httpx.AsyncClient(timeout=10) as http:
        _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard())
        response = await http.post(agent.url + "/jsonrpc", json={"id": 1, "method": "x"})
    assert response.json()["error"]["code"] == A2A_GO_UNAUTHENTICATED_CODE


# --- a2a-java's INVALID_REQUEST to a stream, read against a fresh card ------------------------


async def test_java_refusal_degrades_when_the_fresh_card_drops_streaming(agent: Agent) -> None:
    """The card read again says no streaming: DegradeNeeded from the card, one card read."""
    agent.refuse_code = _JAVA_INVALID_REQUEST
    agent.card_streams = False
    hook = RecordingHook()
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(hook), handlers=None)
        with pytest.raises(DegradeNeeded) as failed:
            await _drain(client, _send_request())
    decision = failed.value.decision
    assert decision.reason is Reason.UNSUPPORTED_OPERATION
    assert decision.error is not None
    assert decision.error.source is Source.AGENT_CARD
    assert agent.card_reads == 1
    assert len(hook.calls) == 1


async def test_java_refusal_is_sent_again_without_streaming(agent: Agent) -> None:
    """Default handlers: the degrade sends the message without streaming (the way on)."""
    agent.refuse_code = _JAVA_INVALID_REQUEST
    agent.card_streams = False
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard())
        events = await _drain(client, _send_request())
        assert not client.card.capabilities.streaming  # the fresh card is held from now on
    assert events
    assert agent.sends == 1
    assert agent.card_reads == 1


async def test_the_fallback_send_is_judged_by_its_bytes_too(agent: Agent) -> None:
    """The degrade's send without streaming meets a2a-go's -31401: AuthFailed, not report."""
    agent.refuse_code = _JAVA_INVALID_REQUEST
    agent.send_code = A2A_GO_UNAUTHENTICATED_CODE
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard())
        with pytest.raises(AuthFailed):
            await _drain(client, _send_request())
    assert agent.sends == 1


async def test_java_refusal_stands_when_the_fresh_card_still_claims_streaming(
    agent: Agent,
) -> None:
    """The card read again still claims streaming: the agent's INVALID_REQUEST, as it said it."""
    agent.refuse_code = _JAVA_INVALID_REQUEST
    agent.card_streams = True
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(), handlers=None)
        with pytest.raises(FixRequestNeeded) as failed:
            await _drain(client, _send_request())
        assert agent.card_reads == 1
        with pytest.raises(FixRequestNeeded):
            await _drain(client, _send_request())  # the next call reads it once more, no more
    assert failed.value.decision.reason is Reason.INVALID_REQUEST
    assert failed.value.decision.error is not None
    assert failed.value.decision.error.source is not Source.AGENT_CARD
    assert agent.card_reads == 2


# --- naming the skill -------------------------------------------------------------------------


class Outcomes(RecordingHook):
    """A recording hook that also keeps the task outcomes it is told."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[TaskOutcomeEvent] = []

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """Keep a task outcome."""
        self.outcomes.append(event)


def _skills(hook: Outcomes) -> list[str | None]:
    return [event.skill for event in hook.outcomes]


@pytest.mark.parametrize(
    ("skill", "expected"),
    [
        ("summarise", "summarise"),
        (lambda request: "from-request", "from-request"),
        (lambda request: None, "from-metadata"),
        (None, "from-metadata"),
    ],
    ids=["string", "function", "function-none", "default"],
)
async def test_the_client_names_the_skill_of_its_tasks(
    agent: Agent, skill: Callable[[Any], str | None] | str | None, expected: str
) -> None:
    """guard_client(skill=...) reaches the task outcome hooks; the metadata is the fallback."""
    hook = Outcomes()
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(hook), skill=skill)
        await _drain(client, _send_request(metadata={"skill": "from-metadata"}))
    assert _skills(hook) == [expected]


async def test_a_sends_own_skill_comes_first_and_getask_gets_the_clients(agent: Agent) -> None:
    """send_message(skill=) beats the client's; a GetTask of an unknown task gets the client's."""
    hook = Outcomes()
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(hook), skill="billing")
        async for _ in client.send_message(_send_request(), skill="refunds"):
            pass
    assert _skills(hook) == ["refunds"]
    hook = Outcomes()
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(hook), skill="billing")
        await client.get_task(_get_request())
    assert _skills(hook) == ["billing"]


async def test_the_skill_reaches_the_metrics_label(agent: Agent) -> None:
    """PrometheusHook's task outcome counter carries the skill the client named."""
    prometheus = pytest.importorskip("prometheus_client")
    from a2a_client_errors.instrumentation import PrometheusHook

    registry = prometheus.CollectorRegistry()
    guard = Guard(sleep=lambda _: None, hooks=[PrometheusHook(registry=registry)])
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", guard, skill="summarise")
        await _drain(client, _send_request())
    skills = {
        sample.labels["skill"]: sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == "a2a_client_task_outcomes_total"
    }
    assert skills == {"summarise": 1.0}


def test_a_skill_that_is_neither_string_nor_function_is_refused() -> None:
    """skill=3 is a TypeError at once, not a label that fails later."""
    with pytest.raises(TypeError, match="skill"):
        guard_client(object(), Guard(), skill=3)  # type: ignore[arg-type]


# --- gRPC: a2a-sdk keeps the status ---------------------------------------------------------


def _status_trailer(code: int, reason: str, message: str) -> tuple[tuple[str, bytes], ...]:
    """``grpc-status-details-bin``: a google.rpc.Status whose last detail is the ErrorInfo."""
    from google.rpc import error_details_pb2, status_pb2

    info = error_details_pb2.ErrorInfo(reason=reason, domain="a2a-protocol.org")
    status = status_pb2.Status(code=code, message=message)
    status.details.add().Pack(info)
    return (("grpc-status-details-bin", status.SerializeToString()),)


class GoGrpcAgent:
    """A gRPC server of ours that refuses every call as a2a-go 2.3.1's gRPC binding does.

    Any A2A service name (``lf.a2a.v1`` or 0.3's ``a2a.v1``): a stream is refused with
    FAILED_PRECONDITION and an ErrorInfo UNSUPPORTED_OPERATION (the last detail, as a2a-go
    writes it); with ``auth`` set, every call with that bare status (UNAUTHENTICATED or
    PERMISSION_DENIED, a2a-go's for its -31401 / -31403).
    """

    def __init__(self) -> None:
        self.auth: Any = None

    def service(self, details: Any) -> Any:
        """The generic handler: every method of the A2A service."""
        import grpc

        method = str(details.method)
        if "A2AService/" not in method:
            return None
        streaming = method.endswith(("/SendStreamingMessage", "/SubscribeToTask"))

        async def refuse(request: bytes, context: Any) -> Any:
            if self.auth is not None:
                await context.abort(self.auth, "refused")
            code = grpc.StatusCode.FAILED_PRECONDITION
            said = "streaming is not supported"
            await context.abort(
                code,
                said,
                trailing_metadata=_status_trailer(code.value[0], "UNSUPPORTED_OPERATION", said),
            )

        async def refuse_stream(request: bytes, context: Any) -> Any:
            await refuse(request, context)
            yield b""  # pragma: no cover (aborted before)

        if streaming:
            return grpc.unary_stream_rpc_method_handler(refuse_stream)
        return grpc.unary_unary_rpc_method_handler(refuse)


@pytest.fixture(name="go_grpc")
async def go_grpc_fixture() -> Any:
    """The gRPC agent on 127.0.0.1 (an ephemeral port), stopped after the test."""
    grpc = pytest.importorskip("grpc")

    agent = GoGrpcAgent()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([agent])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield agent, f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


def _grpc_client(
    target: str, guard: Guard, http: httpx.AsyncClient, *, streaming: bool = True
) -> Any:
    import grpc.aio
    from a2a.client import ClientFactory

    config = _config(http, "GRPC", streaming=streaming)
    config.grpc_channel_factory = grpc.aio.insecure_channel
    client = ClientFactory(config).create(_card(target, "GRPC"))
    return guard_client(client, guard, handlers=None)


async def test_go_grpc_refused_stream_degrades(go_grpc: Any) -> None:
    """a2a-go's refused gRPC stream: DegradeNeeded, read from the status a2a-sdk chained."""
    _, target = go_grpc
    hook = RecordingHook()
    async with httpx.AsyncClient() as http:
        client = _grpc_client(target, _guard(hook), http)
        try:
            assert not client.reads_answers  # nothing to read beside a2a-sdk: it keeps it
            with pytest.raises(DegradeNeeded) as failed:
                await _drain(client, _send_request())
        finally:
            await client.close()
    assert failed.value.decision.reason is Reason.UNSUPPORTED_OPERATION
    assert len(hook.calls) == 1


@pytest.mark.parametrize(
    ("code", "reason"),
    [("UNAUTHENTICATED", Reason.UNAUTHENTICATED), ("PERMISSION_DENIED", Reason.UNAUTHORIZED)],
)
async def test_go_grpc_auth_statuses_are_auth(go_grpc: Any, code: str, reason: Reason) -> None:
    """a2a-go's gRPC UNAUTHENTICATED / PERMISSION_DENIED (its -31401 / -31403): AuthFailed."""
    import grpc

    agent, target = go_grpc
    agent.auth = getattr(grpc.StatusCode, code)
    async with httpx.AsyncClient() as http:
        client = _grpc_client(target, _guard(), http, streaming=False)
        try:
            with pytest.raises(AuthFailed) as failed:
                await _drain(client, _send_request())
        finally:
            await client.close()
    assert failed.value.decision.action is Action.AUTH
    assert failed.value.decision.reason is reason


# --- bounds and isolation ---------------------------------------------------------------------


async def _subscribe(client: Any) -> list[Any]:
    if ONE:
        request = a2a_pb2.SubscribeToTaskRequest(id=TASK_ID)
        return [event async for event in client.subscribe(request)]
    from a2a.types import TaskIdParams

    return [event async for event in client.resubscribe(TaskIdParams(id=TASK_ID))]


async def test_an_internal_error_retried_reads_the_card_once(agent: Agent) -> None:
    """-32603 to a subscription, the fresh card still streaming: retried, one card read."""
    agent.internal_streams = True
    agent.card_streams = True
    hook = RecordingHook()
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(hook), handlers=None)
        with pytest.raises(CallFailed) as failed:
            await _subscribe(client)
    assert failed.value.attempts == 3  # every attempt made: the card changed nothing
    assert agent.card_reads == 1
    assert len(hook.calls) == 1


async def test_an_internal_error_degrades_when_the_fresh_card_drops_streaming(
    agent: Agent,
) -> None:
    """-32603 to a stream, the fresh card without streaming: degrade at once, nothing retried."""
    agent.internal_streams = True
    agent.card_streams = False
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(), handlers=None)
        with pytest.raises(DegradeNeeded) as failed:
            await _drain(client, _send_request())
    assert failed.value.attempts == 1
    assert agent.card_reads == 1


async def test_a_card_that_cannot_be_read_leaves_the_refusal_as_it_is(agent: Agent) -> None:
    """The card's path answers 404: the agent's INVALID_REQUEST stands; one read tried."""
    agent.refuse_code = _JAVA_INVALID_REQUEST
    agent.card_served = False
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(), handlers=None)
        with pytest.raises(FixRequestNeeded) as failed:
            await _drain(client, _send_request())
    assert failed.value.decision.reason is Reason.INVALID_REQUEST
    assert agent.card_reads == 1


async def test_concurrent_calls_on_one_httpx_client_read_their_own_answers(agent: Agent) -> None:
    """Two guarded calls at once over one httpx client: each is judged by its own answer."""
    agent.refuse_code = A2A_GO_UNAUTHENTICATED_CODE
    async with httpx.AsyncClient(timeout=10) as http:
        refused = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(), handlers=None)
        served = _client(agent.url + "/plain/jsonrpc", http, "JSONRPC", _guard(), handlers=None)
        results = await asyncio.gather(
            *(
                call
                for _ in range(5)
                for call in (
                    refused.get_task(_get_request()),
                    served.get_task(_get_request()),
                )
            ),
            return_exceptions=True,
        )
    assert [isinstance(result, AuthFailed) for result in results] == [True, False] * 5
    assert not any(isinstance(result, BaseException) for result in results[1::2])


async def test_guarded_factory_builds_no_httpx_client_of_its_own_and_reads_the_sdks(
    agent: Agent,
) -> None:
    """A configuration without an httpx client: a2a-sdk builds one, and its answers are read."""
    agent.refuse_code = A2A_GO_UNAUTHENTICATED_CODE
    from a2a.client import ClientConfig

    config = ClientConfig(streaming=False)
    factory = guarded_factory(config, _guard(), handlers=None)
    client = factory.create(_card(agent.url + "/jsonrpc", "JSONRPC"))
    try:
        assert client.reads_answers
        with pytest.raises(AuthFailed):
            await client.get_task(_get_request())
    finally:
        await client.close()
    assert config.httpx_client is None  # the caller's configuration is as it was


# --- a look-up's reads ------------------------------------------------------------------------


async def test_a_look_ups_read_is_judged_by_the_agents_bytes(agent: Agent) -> None:
    """A look-up's GetTask refused with a2a-go's -31401: the look-up says UNAUTHENTICATED."""
    agent.refuse_code = A2A_GO_UNAUTHENTICATED_CODE
    async with httpx.AsyncClient(timeout=10) as http:
        client = _client(agent.url + "/jsonrpc", http, "JSONRPC", _guard(), handlers=None)
        with pytest.raises(LookupError, match="UNAUTHENTICATED"):
            await client.find_sent(SentMessage("m-1", "c-1", TASK_ID))
