"""How the probe obtains its answers: one exchange per binding, and the card's interfaces.

JSON-RPC and HTTP+JSON go over httpx (`HttpWire`), gRPC over a channel opened only when a
gRPC interface is probed (`GrpcWire`); each answer, read capped (a stream up to its first
event), becomes an `Answer` and then an `Observed`. `WireContext` opens the wire an
interface needs; `interfaces_of` and `summary_of` read the agent card.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlsplit

import httpx

from a2a_client_errors import CallError, normalize, task_outcome
from a2a_client_errors.probe._expect import random_id
from a2a_client_errors.probe._report import GRPC, HTTP_JSON, JSONRPC, AgentSummary, Observed, capped
from a2a_client_errors.types import (
    A2A_DOMAIN,
    ERROR_INFO_TYPE,
    GRPC_SERVICE,
    NO_BODY,
    OPERATIONS_BY_NAME,
    STREAMING_OPERATIONS,
    AttemptCutShortError,
    ErrorKind,
    EventReader,
    Source,
    SSEError,
    TransportFailure,
    WireShape,
    event_error,
    normalize_body,
    read_dedupe_params,
    rest_request,
    stream_error,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MAX_BODY: Final = 1024 * 1024
_MAX_STREAM: Final = 4 * MAX_BODY  # bytes of a stream read while waiting for its first event
_HOP_HEADERS: Final = ("via", "server", "x-served-by", "x-cache", "cf-ray")
_GRPC_HOP_KEYS: Final = ("via", "server", "x-envoy-upstream-service-time")


# --------------------------------------------------------------------------------------------
# The run's deadline
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deadline:
    """When the whole probe must be over (``timeout`` seconds after it started)."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline ``seconds`` from now."""
        return cls(time.monotonic() + seconds)

    def left(self) -> float:
        """Seconds left (0.0 once it passed)."""
        return max(self.at - time.monotonic(), 0.0)

    def check(self) -> None:
        """Raise `AttemptCutShortError` once it passed (between the chunks of a body)."""
        if time.monotonic() > self.at:
            raise AttemptCutShortError(_OUT_OF_TIME)


_OUT_OF_TIME: Final = "the probe's time (timeout) ran out"


# --------------------------------------------------------------------------------------------
# The card
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interface:
    """One interface the card lists: binding, URL, protocol version and tenant."""

    binding: str
    url: str
    version: str | None
    tenant: str | None


def _flag(value: object) -> bool:
    return value is True


def summary_of(card: Mapping[str, Any]) -> AgentSummary:
    """What the probe reads from the card: the agent's name and what it says it supports."""
    caps = card.get("capabilities")
    capabilities: Mapping[str, Any] = caps if isinstance(caps, dict) else {}
    extensions = capabilities.get("extensions")
    required = [
        extension["uri"]
        for extension in (extensions if isinstance(extensions, list) else ())
        if isinstance(extension, dict)
        and extension.get("required") is True
        and isinstance(extension.get("uri"), str)
        and extension["uri"]
    ]
    extended = capabilities.get("extendedAgentCard")
    if extended is None:  # 0.3 put it at the top level
        extended = card.get("supportsAuthenticatedExtendedCard")
    name = card.get("name")
    return AgentSummary(
        name=name if isinstance(name, str) else None,
        streaming=_flag(capabilities.get("streaming")),
        push_notifications=_flag(capabilities.get("pushNotifications")),
        extended_agent_card=_flag(extended),
        required_extensions=tuple(required),
        deduplicate=read_dedupe_params(card),
    )


_BINDING_NAMES: Final[Mapping[str, str]] = {
    "JSONRPC": JSONRPC,
    "JSON-RPC": JSONRPC,
    "HTTP+JSON": HTTP_JSON,
    "HTTP_JSON": HTTP_JSON,
    "REST": HTTP_JSON,
    "GRPC": GRPC,
}


def interfaces_of(card: Mapping[str, Any]) -> list[Interface]:
    """The interfaces the card lists (``supportedInterfaces``), in its order."""
    found: list[Interface] = []
    listed = card.get("supportedInterfaces")
    if isinstance(listed, list):
        for item in listed:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            declared = item.get("protocolBinding")
            declared = declared if isinstance(declared, str) else ""
            version = item.get("protocolVersion")
            tenant = item.get("tenant")
            found.append(
                Interface(
                    _BINDING_NAMES.get(declared.upper(), declared or "unknown"),
                    item["url"],
                    version if isinstance(version, str) and version else None,
                    tenant if isinstance(tenant, str) and tenant else None,
                )
            )
        return found
    # An A2A 0.3 card: url + preferredTransport (+ additionalInterfaces with transport).
    version = card.get("protocolVersion")
    version = version if isinstance(version, str) and version else "0.3"
    if isinstance(card.get("url"), str):
        preferred = card.get("preferredTransport")
        declared = preferred if isinstance(preferred, str) else "JSONRPC"
        found.append(
            Interface(_BINDING_NAMES.get(declared.upper(), declared), card["url"], version, None)
        )
    extra = card.get("additionalInterfaces")
    if isinstance(extra, list):
        for item in extra:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                declared = item.get("transport")
                declared = declared if isinstance(declared, str) else "unknown"
                interface = Interface(
                    _BINDING_NAMES.get(declared.upper(), declared), item["url"], version, None
                )
                if interface not in found:
                    found.append(interface)
    return found


# --------------------------------------------------------------------------------------------
# What came back
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """One exchange: the error `normalize` found (None for a result), and the result."""

    error: CallError | None
    payload: object = None
    hops: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    http_status: int | None = None


def _error_info(error: CallError) -> tuple[str | None, str | None] | None:
    """(reason, domain) of the ErrorInfo in the details: the A2A one first, else any."""
    first: tuple[str | None, str | None] | None = None
    for detail in error.raw_details:
        type_url = detail.get("@type")
        if type_url == ERROR_INFO_TYPE or (type_url is None and "reason" in detail):
            reason, domain = detail.get("reason"), detail.get("domain")
            item = (
                reason if isinstance(reason, str) else None,
                domain if isinstance(domain, str) else None,
            )
            if item[1] == A2A_DOMAIN:
                return item
            first = first or item
    return first


def payload_summary(payload: object) -> str:
    """What a successful answer was, in a few words."""
    outcome = task_outcome(payload) if isinstance(payload, dict) else None
    if outcome is not None:
        return f"a task in {outcome.state}"
    if isinstance(payload, dict):
        if isinstance(payload.get("message"), dict) or "messageId" in payload:
            return "a Message"
        if "supportedInterfaces" in payload or "skills" in payload:
            return "an agent card"
        if "artifactUpdate" in payload:
            return "an artifact update"
        return "a JSON answer"
    if payload is None:
        return "an answer without a body"
    return "an answer"


def observed_of(answer: Answer) -> Observed:
    """What the report shows of ``answer``: its codes, reason, ErrorInfo and hops."""
    error = answer.error
    if error is None:
        return Observed(
            "success",
            http_status=answer.http_status,
            content_type=answer.content_type,
            message=payload_summary(answer.payload),
            hops=answer.hops,
        )
    info = _error_info(error)
    outcome = "no_answer" if _no_answer(error) else "error"
    return Observed(
        outcome,
        reason=None if error.reason is None else str(error.reason),
        source=error.source.value,
        wire=error.wire.value,
        jsonrpc_code=error.jsonrpc_code,
        http_status=error.http_status if error.http_status is not None else answer.http_status,
        grpc_status=error.grpc_status,
        error_info_reason=None if info is None else info[0],
        domain=None if info is None else info[1],
        content_type=answer.content_type,
        message=error.message,
        hops=answer.hops,
        delivery=error.delivery.value,
    )


def _no_answer(error: CallError) -> bool:
    """A transport failure, or a gRPC channel that never reached a server."""
    if error.wire is WireShape.TRANSPORT:
        return True
    return (
        error.wire is WireShape.GRPC
        and error.grpc_status in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
        and not error.raw_details
    )


def hops_text(hops: Mapping[str, str]) -> str:
    """The hops that answered, for a note."""
    return "; ".join(f"{name} '{value}'" for name, value in hops.items())


# --------------------------------------------------------------------------------------------
# Bindings: one exchange each
# --------------------------------------------------------------------------------------------


def hops_of(headers: httpx.Headers) -> dict[str, str]:
    """The headers that name the hops that answered (``Via``, ``Server``, ...), capped."""
    found: dict[str, str] = {}
    for name in _HOP_HEADERS:
        values = headers.get_list(name)
        if values:
            found[name] = capped(", ".join(values))
    return found


class HttpWire:
    """JSON-RPC or HTTP+JSON over one httpx client."""

    def __init__(
        self,
        client: httpx.Client,
        binding: str,
        url: str,
        tenant: str | None,
        deadline: Deadline,
    ) -> None:
        self.client = client
        self.binding = binding
        self.url = url.rstrip("/") if binding == HTTP_JSON else url
        self.tenant = tenant
        self.deadline = deadline

    def call(
        self,
        operation: str,
        params: Mapping[str, Any],
        *,
        version: str,
        extensions: Sequence[str],
        raw_body: bytes | None = None,
        envelope: Mapping[str, Any] | None = None,
    ) -> Answer:
        """Send one request; ``raw_body`` or ``envelope`` replace the well-formed body."""
        headers = {"A2A-Version": version}
        if extensions:
            headers["A2A-Extensions"] = ",".join(extensions)
        stream = operation in STREAMING_OPERATIONS
        headers["Accept"] = "text/event-stream" if stream else "application/json"
        body: object
        if self.binding == JSONRPC:
            method, url = "POST", self.url
            payload = dict(params)
            if self.tenant:
                payload["tenant"] = self.tenant
            body = envelope or {
                "jsonrpc": "2.0",
                "id": random_id(),
                "method": operation,
                "params": payload,
            }
        else:
            method, path, body = rest_request(operation, params)
            prefix = f"/{quote(self.tenant, safe='')}" if self.tenant else ""
            url = self.url + prefix + path
        content: bytes | None = raw_body
        if content is None and body is not None:
            content = json.dumps(body).encode("utf-8")
        if content is not None:
            headers["Content-Type"] = "application/json"
        left = self.deadline.left()
        if not left:
            return Answer(_out_of_time())
        request = self.client.build_request(
            method, url, content=content, headers=headers, timeout=left
        )
        return _exchange(self.client, request, stream=stream, deadline=self.deadline)


def _exchange(
    client: httpx.Client, request: httpx.Request, *, stream: bool, deadline: Deadline
) -> Answer:
    """Send ``request`` and read what came back (a stream up to its first event), capped."""
    try:
        response = client.send(request, stream=True)
    except Exception as exc:  # every transport failure is an observation, never a crash
        return Answer(normalize(exc) or _transport_error(exc))
    status = response.status_code
    content_type = response.headers.get("content-type")
    hops = hops_of(response.headers)
    try:
        if stream and 200 <= status < 300 and (content_type or "").startswith("text/event-stream"):
            return _first_event(response, hops, deadline)
        body = read_capped(response, deadline)
    except Exception as exc:  # the body broke off: a transport failure
        return Answer(normalize(exc) or _transport_error(exc), hops=hops, http_status=status)
    finally:
        response.close()
    kept = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")
    ]
    full = httpx.Response(status, headers=kept, content=body, request=request)
    error, parsed = normalize_body(full)  # one parse: the answer's result is the body read
    payload: object = None
    if error is None and parsed is not NO_BODY:
        payload = parsed
        if isinstance(payload, dict) and "jsonrpc" in payload:
            payload = payload.get("result")
    return Answer(error, payload, hops, content_type, status)


def read_capped(response: httpx.Response, deadline: Deadline) -> bytes:
    """The body, read up to the cap and one byte more (so that a caller can tell it was cut).

    Raises:
        AttemptCutShortError: the probe's deadline passed while the body came in.

    """
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY:
            break
        deadline.check()
    return b"".join(chunks)[: MAX_BODY + 1]


def _first_event(response: httpx.Response, hops: dict[str, str], deadline: Deadline) -> Answer:
    """Read an event stream up to its first event (bounded in time and size).

    The one SSE reader reads it, capped: a line or an event past ``MAX_BODY``, or no event in
    the first ``_MAX_STREAM`` bytes, is an invalid answer; the probe's deadline ends the wait.
    """
    reader = EventReader(max_line=MAX_BODY, max_event=MAX_BODY, max_stream=_MAX_STREAM)
    status = response.status_code
    content_type = response.headers.get("content-type")
    events: list[tuple[str, str]] = []
    try:
        for chunk in response.iter_bytes():
            events = reader.feed(chunk)
            if events:
                break
            deadline.check()
        else:
            events = reader.end()
    except SSEError as exc:
        return Answer(
            replace(stream_error(exc), http_status=status), None, hops, content_type, status
        )
    if not events:
        return Answer(None, None, hops, content_type, status)
    parsed, error = event_error(*events[0])
    if error is not None:
        error = replace(error, http_status=status)
        return Answer(error, None, hops, content_type, status)
    if isinstance(parsed, dict) and "jsonrpc" in parsed:
        parsed = parsed.get("result")
    return Answer(None, parsed, hops, content_type, status)


def _out_of_time() -> CallError:
    """A request the probe did not send: its deadline had passed."""
    return CallError(
        ErrorKind.TRANSPORT,
        None,
        Source.TRANSPORT,
        WireShape.TRANSPORT,
        message=_OUT_OF_TIME,
        transport=TransportFailure.TIMEOUT,
    )


def _transport_error(exc: BaseException) -> CallError:
    return CallError(
        ErrorKind.TRANSPORT,
        None,
        Source.TRANSPORT,
        WireShape.TRANSPORT,
        message=f"the call raised ({type(exc).__name__})",  # never the exception's own text
        transport=TransportFailure.UNKNOWN,
    )


class GrpcWire:
    """The gRPC binding: generic calls on one channel, status and trailer read as they come."""

    def __init__(
        self,
        channel: Any,
        metadata: Sequence[tuple[str, str]],
        tenant: str | None,
        deadline: Deadline,
    ) -> None:
        import grpc  # noqa: PLC0415 (optional: the grpc extra)
        from a2a.types import a2a_pb2  # noqa: PLC0415 (optional: a2a-sdk's messages)
        from google.protobuf import json_format  # noqa: PLC0415

        self.grpc: Any = grpc
        self.pb2: Any = a2a_pb2
        self.json_format: Any = json_format
        self.channel = channel
        self.metadata = list(metadata)
        self.tenant = tenant
        self.deadline = deadline

    def call(
        self,
        operation: str,
        params: Mapping[str, Any],
        *,
        version: str,
        extensions: Sequence[str],
    ) -> Answer:
        """One call; the answer's status and ``grpc-status-details-bin`` read by `normalize`."""
        op = OPERATIONS_BY_NAME[operation]
        payload = dict(params)
        if self.tenant:
            payload["tenant"] = self.tenant
        request = self.json_format.ParseDict(payload, getattr(self.pb2, op.grpc_request)())
        metadata = [*self.metadata, ("a2a-version", version)]
        if extensions:
            metadata.append(("a2a-extensions", ",".join(extensions)))
        path = f"/{GRPC_SERVICE}/{operation}"
        serialize = type(request).SerializeToString
        grpc = self.grpc
        timeout = self.deadline.left()
        if not timeout:
            return Answer(_out_of_time())
        try:
            if op.streams:
                call = self.channel.unary_stream(path, request_serializer=serialize)(
                    request, timeout=timeout, metadata=metadata
                )
                try:
                    first = next(iter(call), None)
                    hops = _grpc_hops(call)
                finally:
                    call.cancel()
                data = first
            else:
                data, call = self.channel.unary_unary(path, request_serializer=serialize).with_call(
                    request, timeout=timeout, metadata=metadata
                )
                hops = _grpc_hops(call)
        except grpc.RpcError as exc:
            return Answer(normalize(exc), hops=_grpc_hops(exc))
        return Answer(None, self._decode(op.grpc_response, data), hops)

    def _decode(self, name: str, data: object) -> object:
        if not isinstance(data, bytes):
            return None
        try:
            message = getattr(self.pb2, name).FromString(data)
            decoded: object = self.json_format.MessageToDict(message)
        except Exception:  # a peer's bytes that are not the message: summarised as such
            return {"undecodable": len(data)}
        return decoded


def _grpc_hops(call: object) -> dict[str, str]:
    found: dict[str, str] = {}
    for method in ("initial_metadata", "trailing_metadata"):
        getter = getattr(call, method, None)
        try:
            items = getter() if callable(getter) else None
        except Exception:  # metadata that cannot be read names no hop
            items = None
        for item in items or ():
            key, value = (item.key, item.value) if hasattr(item, "key") else item
            if key in _GRPC_HOP_KEYS and isinstance(value, str):
                name = "envoy" if key.startswith("x-envoy") else key
                found.setdefault(name, capped(value if name != "envoy" else "x-envoy-*"))
    return found


# --------------------------------------------------------------------------------------------
# The wire of one interface
# --------------------------------------------------------------------------------------------


class WireContext:
    """Opens the wire for an interface (a gRPC channel needs closing), or says why not."""

    def __init__(
        self,
        client: httpx.Client,
        interface: Interface,
        scheme: str,
        items: Sequence[tuple[str, str]],
        deadline: Deadline,
    ) -> None:
        self.client = client
        self.interface = interface
        self.scheme = scheme
        self.items = items
        self.deadline = deadline
        self.channel: Any = None

    def __enter__(self) -> tuple[HttpWire | GrpcWire | None, str]:
        interface = self.interface
        if interface.binding != GRPC:
            return (
                HttpWire(
                    self.client, interface.binding, interface.url, interface.tenant, self.deadline
                ),
                "",
            )
        try:
            import grpc  # noqa: PLC0415 (optional: the grpc extra)
            from a2a.types import a2a_pb2  # noqa: F401, PLC0415 (optional: a2a-sdk)
        except ImportError as exc:
            return None, (
                f"gRPC needs grpcio and a2a-sdk ({exc.name or 'a module'} is missing): "
                "pip install 'a2a-client-errors[probe]'"
            )
        target, secure = _grpc_target(interface.url, self.scheme)
        try:
            if secure:
                self.channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
            else:
                self.channel = grpc.insecure_channel(target)
        except Exception as exc:  # a target grpc refuses: said, not raised
            return None, f"gRPC cannot open {target}: {type(exc).__name__}"
        metadata = [(name.lower(), value) for name, value in self.items]
        return GrpcWire(self.channel, metadata, interface.tenant, self.deadline), ""

    def __exit__(self, *exc: object) -> None:
        if self.channel is not None:
            self.channel.close()


def _grpc_target(url: str, given_scheme: str) -> tuple[str, bool]:
    """(target, TLS?) for a gRPC interface URL: its scheme decides, else the URL given's."""
    text = url.strip()
    if text.startswith("dns:"):
        return text, given_scheme == "https"
    if "://" not in text:
        return text, given_scheme == "https"
    parts = urlsplit(text)
    secure = parts.scheme in ("https", "grpcs")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if parts.port is None and (secure or parts.scheme == "http"):
        netloc += ":443" if secure else ":80"
    return netloc, secure
