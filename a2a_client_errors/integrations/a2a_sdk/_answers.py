"""What the agent sent, read beside a2a-sdk's client: its bytes win over the SDK's exception.

a2a-sdk's clients keep less of an answer than the answer said. a2a-sdk 1.x keeps no JSON-RPC
code it has no class for (a2a-go's -31401 and -31403 become an ``A2AClientError`` whose text
alone names them), and its HTTP+JSON stream parser reads a2a-go's refused stream (``200
text/event-stream`` whose one event is ``{"error": google.rpc.Status}``) as one empty event.
Judged by what the SDK kept, the first is a ``report`` and the second an interrupted stream.

So the guarded client reads the answers itself, with no step of the caller's: each httpx client
the a2a-sdk client sends with gets one more response hook (`read_answers_of`, through httpx's
public ``event_hooks``, as `a2a_client_errors._redirects.refuse_redirects_of` is). While a
guarded call is in flight (`reading`: a per-call slot in a context variable, so that calls in
other tasks never see each other's), the hook reads each answer as the httpx transports do:

* a body (within the Guard's ``max_body``, before the deadline), which httpx reads next anyway;
* an event stream up to its first event only: a stream of results is handed on from there,
  its bytes replayed to the SDK (`a2a_client_errors._reading.aread_within`);

and keeps the answer, to be judged only if the call fails (`Read.error`, the last answer's:
None for a result; a call that succeeds never parses it a second time). The guarded client
raises that error (as `a2a_client_errors._normalize.PeerAnswerError`, chained
from the SDK's exception) in place of what the SDK made of the answer. When no answer was read
(another binding, a transport that is not httpx, a body past ``max_body``), the SDK's exception
is read as before.

Outside a guarded call the hook does nothing: the httpx client, shared or not, answers as it
did. The hook never decides and never tells a hook or a metric: the Guard judges the call once.

gRPC needs none of this: a2a-sdk's gRPC transport raises its own exception *from* grpcio's
``AioRpcError``, whose status, details and trailing metadata `normalize` reads from the chain.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import httpx

from a2a_client_errors._card_claims import CARD_PATHS
from a2a_client_errors._normalize import DEFAULT_LIMITS, Limits, StreamHead, normalize
from a2a_client_errors._reading import aread_within
from a2a_client_errors._redirects import FOLLOWED
from a2a_client_errors._transport import cannot_hold_an_error
from a2a_client_errors.integrations.a2a_sdk._compat import base_transport, http_clients

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from a2a_client_errors._errors import CallError

__all__ = ["Read", "read_answer", "read_answers", "read_answers_of", "reading", "unread"]


@dataclass(slots=True)
class Read:
    """What the answers of one guarded attempt said (the slot the hook writes into).

    Attributes:
        limits: the Guard's caps: a body past ``limits.max_body`` is not read.
        clock: the Guard's clock, for ``deadline_at``.
        deadline_at: when reading must stop (None: no deadline).
        answers: how many answers were read.
    """

    limits: Limits = DEFAULT_LIMITS
    clock: Callable[[], float] = time.monotonic
    deadline_at: float | None = None
    answers: int = 0
    last: httpx.Response | None = field(default=None, repr=False)
    """The last answer read whole and not judged yet (None: a result, or none read)."""
    judged: CallError | None = field(default=None, repr=False)

    @property
    def error(self) -> CallError | None:
        """The call error the last answer read holds (None: a result, or none read).

        Judged on first asking, not as the answer comes: a call that succeeds never asks, so
        its body is parsed once, by the client library.
        """
        if self.last is not None:
            self.judged, self.last = normalize(self.last, limits=self.limits), None
        return self.judged

    def keep(self, response: httpx.Response | None) -> None:
        """``response`` is the last answer (None: one that holds no call error)."""
        self.last, self.judged = response, None


_IN_FLIGHT: Final[ContextVar[Read | None]] = ContextVar(
    "a2a_client_errors.integrations.a2a_sdk.read", default=None
)


@contextlib.contextmanager
def reading(
    limits: Limits = DEFAULT_LIMITS,
    clock: Callable[[], float] = time.monotonic,
    deadline_at: float | None = None,
) -> Iterator[Read]:
    """Read the answers the httpx clients get in this context until the block ends."""
    slot = Read(limits, clock, deadline_at)
    token = _IN_FLIGHT.set(slot)
    try:
        yield slot
    finally:
        _IN_FLIGHT.reset(token)


@contextlib.contextmanager
def unread() -> Iterator[None]:
    """Read no answer in this block (a card read in the middle of a call is not its answer)."""
    token = _IN_FLIGHT.set(None)
    try:
        yield
    finally:
        _IN_FLIGHT.reset(token)


async def read_answer(response: httpx.Response) -> None:
    """An ``httpx.AsyncClient`` response hook: keep the call error ``response`` holds.

    Only while a guarded call is in flight (`reading`); a redirect httpx may follow, and an
    agent card, are no call's answer.
    """
    slot = _IN_FLIGHT.get()
    if slot is None or response.status_code in FOLLOWED:
        return
    if response.request.url.path.endswith(CARD_PATHS):
        return
    slot.answers += 1
    if not _read(response) and not await _read_head(response, slot):
        slot.keep(None)  # a stream of results, or a body past max_body: the SDK's to read
        return
    slot.keep(None if cannot_hold_an_error(response) else response)


def _read(response: httpx.Response) -> bool:
    """Whether the body has been read already (by a transport under the client, say)."""
    try:
        response.content  # noqa: B018 (raises when not read)
    except httpx.ResponseNotRead:
        return False
    return True


async def _read_head(response: httpx.Response, slot: Read) -> bool:
    """Read the body (an event stream up to its first event); whether it was read whole."""
    head = None
    if 200 <= response.status_code < 300 and response.headers.get("content-type", "").startswith(
        "text/event-stream"
    ):
        head = StreamHead(slot.limits)
    return await aread_within(
        response,
        slot.limits.max_body,
        deadline_at=slot.deadline_at,
        clock=slot.clock,
        enough=head,
    )


def read_answers_of(client: httpx.AsyncClient) -> None:
    """Install `read_answer` on ``client`` (once), after its own response hooks."""
    hooks = client.event_hooks
    responses = list(hooks.get("response", ()))
    if read_answer not in responses:
        client.event_hooks = {**hooks, "response": [*responses, read_answer]}


def read_answers(client: Any) -> bool:
    """Read the answers of every httpx client an a2a-sdk ``Client`` sends with (`http_clients`).

    Returns:
        Whether its calls' answers are read so: its binding's transport sends with httpx
        (False: gRPC, whose status a2a-sdk keeps, or a transport that is not a2a-sdk's; their
        answers are judged by what a2a-sdk raises, as before). Card reads through the
        configuration's httpx client are never a call's answer.
    """
    for http in http_clients(client):
        read_answers_of(http)
    return isinstance(getattr(base_transport(client), "httpx_client", None), httpx.AsyncClient)
