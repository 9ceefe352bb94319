"""The httpx transports that run each request through a `Guard`, and the operation routing.

Mount `GuardTransport` (or `AsyncGuardTransport`) in an httpx client, and so under any A2A
client built on httpx; `operation_of` tells which A2A operation a request carries.

`GuardTransport` and `AsyncGuardTransport` share one base (`_TransportBase`) and the Guard's
one loop: a retry resends the identical request (the same bytes); a request whose body cannot
be replayed, or a SendMessage without a messageId, is never resent. Their look-up readers
share `_Reader`, whose reads are written once as sans-IO steps that each door's reader
carries out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

import httpx

from a2a_client_errors._card_claims import CARD_PATHS, asks_for_push, keys_of
from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION
from a2a_client_errors._effects import Exchange
from a2a_client_errors._engine import (
    NO_KWARGS,
    AttemptOutcome,
    aattempt_once,
    adrive,
    attempt_once,
    drive,
    plain_success,
)
from a2a_client_errors._failures import CallFailed
from a2a_client_errors._foreign_codes import generation_precondition
from a2a_client_errors._guard import CallShape, Guard, GuardedCall, Lookup
from a2a_client_errors._http_lookup import (
    CannotLookError,
    HttpLookup,
    agent_of,
    answer_kind,
    sent_message,
    task_view,
)
from a2a_client_errors._journal import HEAD, entry_for, task_made
from a2a_client_errors._lookup import (
    WORK_OPERATIONS,
    AnswerTooLargeError,
    CardQuery,
    GetTaskQuery,
    ListTasksQuery,
    LookupResult,
    ReadFailedError,
    SentMessage,
    Unresolved,
    follow_task,
    learn_mark,
)
from a2a_client_errors._normalize import StreamHead, normalize
from a2a_client_errors._operations import OPERATION_OF_METHOD, params_of, rest_operation
from a2a_client_errors._parsing import INVALID, parse_json, request_json
from a2a_client_errors._policy import GiveUp
from a2a_client_errors._reading import aread_within, read_within
from a2a_client_errors._redirects import FOLLOWED, refuse

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Mapping

    from a2a_client_errors._card_claims import CardClaims
    from a2a_client_errors._effects import Effect
    from a2a_client_errors._journal import Entry, JournalRecord

    _Opening = tuple[
        "HttpLookup | None",
        httpx.Request,
        Callable[[], object],
        Callable[[httpx.Response], bool] | None,
    ]
    """A call's finder, the request it sends, that request's body, and `_plain_success`."""

__all__ = ["AsyncGuardTransport", "GuardTransport", "cannot_hold_an_error", "operation_of"]

_log = logging.getLogger("a2a_client_errors")
R = TypeVar("R")
RECORD: Final = "a2a_call"
"""The key of a response's ``extensions`` that holds its call's `CallRecord`."""


_BATCH: Final = Unresolved("a JSON-RPC batch that sends a message is not looked up")


def operation_of(request: httpx.Request, body: object = None) -> str | None:
    """The A2A operation an httpx request carries: its JSON-RPC method or its REST route.

    Args:
        request: the request.
        body: its JSON body, already parsed (parsed here when None and the body is bytes).

    """
    return _operation(request, _json_body(request) if body is None else body)


def _operation(request: httpx.Request, parsed: object) -> str | None:
    """`operation_of` a request whose body is already ``parsed`` (None: none, or not JSON)."""
    if isinstance(parsed, dict) and isinstance(parsed.get("method"), str):
        method: str = parsed["method"]
        return OPERATION_OF_METHOD.get(method, method)
    return rest_operation(request.method, request.url.path)


def _json_body(request: httpx.Request) -> object:
    """The request's JSON body as an agent may read it (`request_json`); None: none, or not JSON."""
    stream = request.stream
    if not isinstance(stream, httpx.ByteStream):
        return None
    try:
        content = request.content
    except httpx.RequestNotRead:  # a request httpx built on the bytes (a redirect's)
        content = b"".join(stream)  # read without being kept: the request stays as it is
    if not content:
        return None
    parsed = request_json(content)
    return None if parsed is INVALID else parsed


def _parsed_once(request: httpx.Request) -> Callable[[], object]:
    """`_json_body` of ``request``, parsed when first asked for and kept for the next asker."""
    kept: list[object] = []

    def parsed() -> object:
        if not kept:
            kept.append(_json_body(request))
        return kept[0]

    return parsed


def _message_id(operation: str | None, body: object) -> bool:
    """Whether a SendMessage body names its message's messageId (other operations: True)."""
    if operation not in WORK_OPERATIONS:
        return True
    params = params_of(body)
    message = None if params is None else params.get("message")
    if not isinstance(message, dict):
        return False
    message_id = message.get("messageId", message.get("message_id"))
    return isinstance(message_id, str) and bool(message_id)


def _precondition(body: object) -> bool | None:
    """Whether a send's body carries ``ifGenerationMatch`` (None: not a send's JSON object)."""
    return generation_precondition(body) if isinstance(body, dict) else None


def cannot_hold_an_error(response: httpx.Response) -> bool:
    """A read 2xx response whose body cannot hold an ``"error"`` member (see the transports)."""
    if not 200 <= response.status_code < 300:
        return False
    try:
        body = response.content
    except httpx.ResponseNotRead:
        return False  # an event stream, passed on unread: judged as such
    # find() and an int: ``in`` tries a bytes operand as an index first (an error raised and
    # cleared, which costs more than the search).
    return body.find(b'"error"') == -1 and _BACKSLASH not in body


_BACKSLASH: Final = ord("\\")
_MARK: Final = DEDUPLICATE_EXTENSION.encode()


def _sends(item: object) -> bool:
    """Whether one JSON-RPC request of a batch sends a message."""
    if not isinstance(item, dict) or not isinstance(item.get("method"), str):
        return False
    return OPERATION_OF_METHOD.get(item["method"]) in WORK_OPERATIONS


def _cannot_look(time_left: float | None) -> LookupResult:
    """The look-up of a batch: it is not made (say so, and resend nothing)."""
    return _BATCH


def _peer_of(request: httpx.Request) -> str:
    url = request.url
    return f"{url.scheme}://{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"


def _learn(guard: Guard, agent: str) -> Callable[[Any], None]:
    """What a send's successful answer teaches about ``agent``: a task, or a Message."""

    def answered(response: Any) -> None:
        if not isinstance(response, httpx.Response) or _TransportBase.is_stream(response):
            return
        kind = answer_kind(parse_json(response.content))
        facts = guard.facts(agent)
        if kind == "message":
            facts.answers_with_messages = True
        elif kind == "task":
            facts.answers_with_tasks = True

    return answered


@dataclass(frozen=True, slots=True)
class _Attempt:
    """Send one attempt of the call, its answer read to be judged (`_TransportBase._attempted`).

    ``request`` is bound to ``until`` (the attempts' deadline).

    ``held``: the answer of the attempt before, left unread (past the byte bound, or an event
    stream): closed first, as this attempt replaces it. Answer: the response.
    """

    request: httpx.Request
    until: float | None
    held: list[httpx.Response]


@dataclass(frozen=True, slots=True)
class _Read:
    """Send ``request`` (bound to ``timeout``), its answer read within ``limit`` bytes, closed.

    Answer: the response and whether it was read within the bound (``limit`` None: the
    Guard's ``max_body``).
    """

    request: httpx.Request
    timeout: float | None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class _Open:
    """Send ``request`` and hand its response back unread, open (a subscription)."""

    request: httpx.Request


@dataclass(frozen=True, slots=True)
class _Close:
    """Close ``response`` (answer ignored)."""

    response: httpx.Response


_Need: TypeAlias = "_Attempt | _Read | _Open | _Close"
"""What a transport's one sender is asked to do: a call's attempts, and its reader's needs
(see `_Reader`)."""


class _Reader:
    """A look-up's reader through a transport's inner transport (a `ReadSteps`).

    Each query is one request through the inner transport, with the original request's
    headers, its body read within the look-up's byte bound. The reader is sans-IO: each of
    ``asking``, ``finding`` and ``settling`` is a generator of the engine's effects, the
    requests among them `Exchange` effects of a `_Need`, carried out by the transport's one
    sender (``sender``: `GuardTransport`'s sync one, `AsyncGuardTransport`'s async one) and
    judged where they were yielded (what the sender raised is thrown in there). The engine's
    drivers carry them out, within a call and for the transport's wait alike.
    """

    view = staticmethod(task_view)

    def __init__(
        self,
        transport: _TransportBase,
        finder: HttpLookup,
        sent: SentMessage,
        *,
        peer: str,
        deadline_at: float | None,
        sender: Callable[[_Need], Any],
    ) -> None:
        self.transport = transport
        self.finder = finder
        self.sent = sent
        self.peer = peer
        self.agent = finder.agent
        self.deadline_at = deadline_at  # the call's: a found task is waited for until then
        self.sender = sender
        self.elsewhere = False  # one interface: the one the message went to
        self.latest: Any = None  # the last task GetTask answered: read whole, not again

    @property
    def limit(self) -> int:
        """Bytes of one answer that are read (the Guard's ``max_body``)."""
        return self.transport.guard.policy.limits.max_body

    def prepared(self, query: GetTaskQuery | ListTasksQuery, timeout: float | None) -> Any:
        """The request that asks ``query``."""
        return self.finder.query(query)

    def answered(self, query: GetTaskQuery | ListTasksQuery, response: httpx.Response) -> Any:
        """The answer to ``query`` (the body was read), the task kept as the latest seen."""
        answer = self.finder.read(query, response)
        if isinstance(query, GetTaskQuery) and answer is not None:
            self.latest = answer
        return answer

    def limit_of(self, query: GetTaskQuery | ListTasksQuery) -> int:
        """Bytes of the answer to ``query`` that are read: a page no further than it may take."""
        limit = self.limit
        if isinstance(query, ListTasksQuery):
            limit = min(limit, self.transport.guard.exactly_once.max_bytes)
            if query.max_bytes is not None:
                limit = min(limit, query.max_bytes)
        return max(limit, 0)

    def too_large(self, limit: int | None = None) -> ReadFailedError:
        """An answer past the bound cannot be read, so nothing can be told from it."""
        return AnswerTooLargeError(f"the answer is larger than {limit or self.limit} bytes")

    def asking(
        self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None
    ) -> Generator[Effect, Any, Any]:
        """One query's read (`ReadSteps.asking`): one request, read within the bound.

        A card is asked at each place it may be, one request each, until one answers.
        """
        if isinstance(query, CardQuery):
            for request in self.finder.card_requests():
                card = yield from self._card(request, timeout)
                if card is not None:
                    return card
            return None
        limit = self.limit_of(query)
        request = self.prepared(query, timeout)
        response, read = yield Exchange(_Read(request, timeout, limit), self.sender)
        if not read:
            raise self.too_large(limit)
        return self.answered(query, response)

    def _card(self, request: httpx.Request, timeout: float | None) -> Generator[Effect, Any, Any]:
        """The agent's card at ``request``'s URL, or None (it never raises: see `TaskReader`)."""
        try:
            response, read = yield Exchange(_Read(request, timeout), self.sender)
        except Exception as exc:  # no card there: the agent is not known to deduplicate
            _log.debug("the agent card could not be read (%s)", type(exc).__name__)
            return None
        return self.finder.card_of(response) if read else None

    def finding(self, task: dict[str, Any]) -> Generator[Effect, Any, httpx.Response]:
        """The found task as the lost answer (`ReadSteps.finding`; see `GuardTransport`)."""
        finder = self.finder
        if not finder.streams:
            # A task found in a listing has no artifacts: read whole (GetTask answers are).
            settled = yield from self.settling(task, reread=task is not self.latest)
            return finder.answer(settled)
        subscribe = finder.subscription(task)
        if subscribe is not None:
            try:
                response: httpx.Response = yield Exchange(_Open(subscribe), self.sender)
            except httpx.HTTPError:
                return finder.answer(task)
            if finder.opened(response):
                return response
            yield Exchange(_Close(response), self.sender)
        return finder.answer(task)

    def settling(
        self, task: dict[str, Any], *, reread: bool = False
    ) -> Generator[Effect, Any, dict[str, Any]]:
        """``task`` once settled, read again until then (or the latest read by the deadline).

        With ``reread`` (a task found in a listing, without its artifacts) it is read once
        whole, settled or not. The reads are a wait's (`Guard.reads`), by the call's deadline.
        """
        if task_view(task).settled and not reread:
            return task
        guard = self.transport.guard
        # The wait's answer is the latest task read (`follow_task`), or ``task`` if none was.
        settled: dict[str, Any] = yield from guard.reads(
            follow_task(task, guard.exactly_once, task_view, reread=reread),
            None,
            agent=self.peer,
            deadline_at=self.deadline_at,
            wait=True,
            steps=self.asking,
        )
        return settled


_UNSET: Final = object()


def _restore(request: httpx.Request, timeout: object) -> None:
    """Give the caller's request back the timeouts it came with (attempts bound their own)."""
    if timeout is _UNSET:
        request.extensions.pop("timeout", None)
    else:
        request.extensions["timeout"] = timeout


def _bound_to(request: httpx.Request, seconds: float) -> None:
    """Give a request the timeouts it has, or ``seconds`` where they are longer or unset."""
    left = max(0.0, seconds)
    current = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {
        phase: left if current.get(phase) is None else min(current[phase], left)
        for phase in ("connect", "read", "write", "pool")
    }


class _TransportBase:
    """What the sync and async transports share: reading requests and rebuilding responses."""

    def __init__(self, guard: Guard, *, raise_failures: bool = False) -> None:
        self.guard = guard
        self.raise_failures = raise_failures

    def _describe(
        self,
        request: httpx.Request,
        body: Callable[[], object],
        sent_at: float,
        deadline_at: float | None,
    ) -> CallShape:
        """The operation, why a resend would be unsafe (if it would be), the look-up, the card.

        The card: what the agent's card says, when this Guard learnt it (`Guard.learn_card`).
        Read only when a decision needs it (a failure, or a hook that sees successes): a call
        that succeeds at once never parses its request.
        """
        shape = self._shape(request, body, sent_at, deadline_at)
        if not self.guard.cards_known:
            return shape
        return replace(shape, card=self._card_finder(request))

    def _shape(
        self,
        request: httpx.Request,
        parsed: Callable[[], object],
        sent_at: float,
        deadline_at: float | None,
    ) -> CallShape:
        if not isinstance(request.stream, httpx.ByteStream):
            return CallShape(_operation(request, None), GiveUp.NOT_REPLAYABLE)
        body = parsed()
        operation = _operation(request, body)
        if isinstance(body, list):
            # A batch holding a SendMessage creates work, and is not looked up as a whole.
            if any(_sends(item) for item in body):
                return CallShape(operation, creates_work=True, lookup=_cannot_look)
            return CallShape(operation)
        if not _message_id(operation, body):
            return CallShape(
                operation, GiveUp.NO_MESSAGE_ID, generation_precondition=_precondition(body)
            )
        if operation not in WORK_OPERATIONS:
            return CallShape(operation)
        precondition = generation_precondition(body)
        peer = _peer_of(request)
        sent = sent_message(body, sent_at)
        answered = _learn(self.guard, agent_of(request))
        push = asks_for_push(body)  # read against a card without push (see `CallShape.card`)
        entry = self._entry(request, body)
        try:
            finder = HttpLookup(request, body)
        except CannotLookError:
            return CallShape(
                operation,
                sent=sent,
                answered=answered,
                asks_push=push,
                entry=entry,
                made=task_made,
                generation_precondition=precondition,
            )
        if not finder.lists:
            self.guard.mark_unlisted(finder.agent)  # A2A 0.3: a lost answer cannot be listed
        assert sent is not None  # noqa: S101 (a SendMessage with a messageId)
        reader = self._reader(finder, sent, peer, deadline_at)
        return CallShape(
            operation,
            sent=sent,
            lookup=reader,
            answered=answered,
            asks_push=push,
            entry=entry,
            made=task_made,
            generation_precondition=precondition,
        )

    def _entry(self, request: httpx.Request, body: object) -> Entry | None:
        """What the journal records of a send (None: the Guard has no journal).

        Its peer is where it went: the URL without its query (which may hold a key), and for
        JSON-RPC the method after ``#`` (what `lookup_for` rebuilds a look-up from).
        """
        if self.guard.journal is None:
            return None
        message = params_of(body)
        message = None if message is None else message.get("message")
        where = str(request.url).partition("#")[0].partition("?")[0]
        if isinstance(body, dict) and isinstance(body.get("method"), str):
            where += f"#{body['method']}"
        return entry_for(message, where)

    def lookup_for(
        self, record: JournalRecord, *, headers: Mapping[str, str] | None = None
    ) -> Lookup | None:
        """A look-up of a journal record's task through this transport (`Guard.recover`).

        Rebuilt from where the send went (the URL its record keeps, and for JSON-RPC its
        method), with ``headers`` (the credentials and ``A2A-Version`` the agent needs: the
        journal keeps none). None when the record was not sent over HTTP.
        """
        where, _, method = record.peer.partition("#")
        if not where.startswith(("http://", "https://")):
            return None
        message: dict[str, Any] = {"messageId": record.message_id, "role": "user", "parts": []}
        if record.context_id:
            message["contextId"] = record.context_id
        if record.task_id:
            message["taskId"] = record.task_id
        body: dict[str, Any] = {"message": message}
        if method:
            body = {"jsonrpc": "2.0", "id": 0, "method": method, "params": body}
        request = httpx.Request("POST", where, json=body, headers=headers)
        try:
            finder = HttpLookup(request, body)
        except CannotLookError:
            return None
        return self._reader(finder, record.sent, _peer_of(request), None)

    def _card_finder(self, request: httpx.Request) -> Callable[[], CardClaims | None]:
        """What finds the card learnt for the interface ``request`` went to (asked on failure).

        The request's URL and each of its parents: an HTTP+JSON route lives under its
        interface's URL.
        """
        guard = self.guard

        def find() -> CardClaims | None:
            for key in keys_of(str(request.url)):
                card = guard.card_claims(key)
                if card is not None:
                    return card
            return None

        return find

    _exchange: Callable[[_Need], Any]
    """The transport's one sender: its attempts and its readers' needs, sync or async."""

    def _reader(
        self, finder: HttpLookup, sent: SentMessage, peer: str, deadline_at: float | None
    ) -> _Reader:
        """A look-up's reader of the task ``sent`` made, its needs sent by this transport."""
        return _Reader(
            self, finder, sent, peer=peer, deadline_at=deadline_at, sender=self._exchange
        )

    def _learn_card(self, request: httpx.Request, response: httpx.Response) -> None:
        """Learn the agent card a GET of ``/.well-known/agent-card.json`` was answered with.

        An a2a-sdk client fetches its card through the same httpx client: guarding that
        client teaches the Guard what the card says (`Guard.learn_card`). Only such a GET
        pays for this; a body not read (past ``max_body``) teaches nothing.
        """
        if not (200 <= response.status_code < 300 and request.url.path.endswith(CARD_PATHS)):
            return
        try:
            content = response.content
        except httpx.ResponseNotRead:
            return
        self.guard.learn_card(parse_json(content))

    def _learn_mark(self, request: httpx.Request, response: httpx.Response) -> None:
        """Learn that the agent deduplicates from a send's answer that carries the mark.

        Costs one search of the bytes read: only an answer holding the extension's URI is
        parsed (`a2a_client_errors._lookup.learn_mark`).
        """
        if not 200 <= response.status_code < 300:
            return
        try:
            content = response.content
        except httpx.ResponseNotRead:
            return  # a stream passed on unread: its first event was read as its head
        if content.find(_MARK) == -1:
            return
        body = parse_json(content)
        if not isinstance(body, dict):  # a stream: its first event's data
            data = next((line for line in content.splitlines() if line.startswith(b"data:")), b"")
            body = parse_json(data[5:])
        learn_mark(self.guard.facts(agent_of(request)), body)

    @property
    def _max_answer(self) -> int:
        """Bytes of a body that are read (the Guard's ``max_body``)."""
        return self.guard.policy.limits.max_body

    def _opening(self, request: httpx.Request, body: Callable[[], object]) -> _Opening:
        """How a call opens: its finder, the request sent, that body, and `_plain_success`.

        ``body`` is the request's (`_parsed_once`). The request sent is a copy sent without
        blocking (its task then waited for) when the call is made so.
        """
        without_blocking = self._non_blocking(request, body)
        if without_blocking is None:
            return None, request, body, self._plain_success(request, body)
        finder, sent = without_blocking
        return finder, sent, _parsed_once(sent), None

    def _plain_success(
        self, request: httpx.Request, body: Callable[[], object]
    ) -> Callable[[httpx.Response], bool] | None:
        """What spares a success its full reading, when nothing depends on that reading.

        A transparent transport (``raise_failures=False``) whose Guard has no hooks hands back
        the answer to a read, success or broken success alike: the only thing that changes
        what happens is a JSON-RPC error on HTTP 2xx, to retry. A body in which the key
        ``"error"`` cannot stand (no such bytes, and no escape that could spell them) is then
        a success without being parsed. A send's answer is a plain success only when it is
        also one (`normalize` against the operation): a broken one is judged in full, and
        looked up. Otherwise (raising, watched by hooks, under a circuit breaker, which
        counts every outcome, or a send that a journal records before its first byte) every
        body is judged in full, INVALID_AGENT_RESPONSE included.
        """
        guard = self.guard
        if self.raise_failures or guard.breaker is not None or guard.observers.any():
            return None
        operation = _operation(request, body())
        if operation not in WORK_OPERATIONS:
            return cannot_hold_an_error
        if guard.journal is not None:
            return None  # a send is recorded before its first byte: the engine makes it
        limits = guard.policy.limits

        def answered(response: httpx.Response) -> bool:
            # A send's broken answer says nothing of its task: it is judged, and looked up.
            return cannot_hold_an_error(response) and (
                normalize(response, limits=limits, operation=operation) is None
            )

        return answered

    def _credited(
        self,
        request: httpx.Request,
        body: Callable[[], object],
        first: AttemptOutcome,
        plain: Callable[[Any], bool],
        start: float,
    ) -> bool:
        """Whether the first attempt is a plain success; if so, its credit given, its record.

        The record's operation is read from the request (``body``, parsed once) only when
        asked for.
        """
        response = first.value
        if response is None or not plain(response):
            return False
        guard = self.guard
        peer = _peer_of(request)
        guard.budget_for(peer).credit()
        record = plain_success(guard, peer, start, lambda: _operation(request, body()))
        response.extensions[RECORD] = record
        return True

    def _begin(
        self,
        request: httpx.Request,
        body: Callable[[], object],
        plain: Callable[[Any], bool] | None,
        start: float,
        deadline_at: float | None,
    ) -> GuardedCall:
        """The guarded call that runs ``request`` (its shape read of ``body`` when needed)."""
        guard = self.guard
        # The wall-clock time the call started at (the first attempt may already be over).
        sent_at = guard.exactly_once.wall_clock() - (guard.clock() - start)
        return guard.begin(
            peer=_peer_of(request),
            describe=lambda: self._describe(request, body, sent_at, deadline_at),
            plain=plain,
            start=start,
            journal_entry=(
                None if guard.journal is None else lambda: self._journal_entry(request, body())
            ),
        )

    def _journal_entry(self, request: httpx.Request, body: object) -> Entry | None:
        """What the journal records of ``request`` (``body``, parsed): a send with a messageId."""
        if not isinstance(request.stream, httpx.ByteStream):
            return None
        operation = _operation(request, body)
        if operation not in WORK_OPERATIONS or not _message_id(operation, body):
            return None
        return self._entry(request, body)

    @staticmethod
    def _recorded(call: GuardedCall, response: httpx.Response) -> httpx.Response:
        """The response, its call's record in its ``extensions`` (``"a2a_call"``)."""
        response.extensions[RECORD] = call.end()
        return response

    def _head(self, response: httpx.Response) -> StreamHead | None:
        """What reads a successful event stream up to its first event (None: not a stream).

        A stream whose first event is a result is handed over unread from there; one that
        holds no event (only comments, ``retry:`` fields, keep-alives) or whose first event
        is an error (a JSON-RPC error, or the HTTP+JSON ``{"error": ...}`` a2a-go sends) is
        read whole and judged as any answer: before its first event a stream is a call like
        any other (retried, degraded, reported).
        """
        return StreamHead(self.guard.policy.limits) if self.is_stream(response) else None

    @staticmethod
    def is_stream(response: httpx.Response) -> bool:
        """Whether a response is a successful event stream (handed over unread)."""
        return 200 <= response.status_code < 300 and response.headers.get(
            "content-type", ""
        ).startswith("text/event-stream")

    def _window(
        self, request: httpx.Request, body: Callable[[], object]
    ) -> tuple[float, float | None, float | None]:
        """When the call starts, its deadline, and its attempts' (a share kept for a look-up).

        (None: no deadline.) Only a call that creates work keeps a share of its deadline for
        the look-up of a lost answer (`ExactlyOnce.reserve`); telling one needs its body read,
        which is done only under a deadline.
        """
        guard = self.guard
        start = guard.clock()
        limit = guard.deadline
        if limit is None:
            return start, None, None
        deadline_at = start + limit
        if _operation(request, body()) not in WORK_OPERATIONS:
            return start, deadline_at, deadline_at
        return start, deadline_at, start + guard.exactly_once.attempt_time(limit, limit)

    def _bound(self, attempt: _Attempt) -> httpx.Request:
        """The attempt's request, given no more than its time left before the deadline.

        The request's own timeouts stay when they are shorter; the bytes sent never change.
        """
        request, until = attempt.request, attempt.until
        if until is not None:
            _bound_to(request, until - self.guard.clock())
        return request

    def _opened(self, request: httpx.Request, response: httpx.Response) -> StreamHead | None:
        """What reads an attempt's answer up to its first event (None: not a stream).

        A redirect to another origin is first made unfollowable (`refuse`).
        """
        if response.status_code in FOLLOWED:
            refuse(response, request)  # to another origin: the client never follows it
        return self._head(response)

    def _attempted(
        self, attempt: _Attempt, response: httpx.Response, read: bool, head: StreamHead | None
    ) -> httpx.Response:
        """An attempt's answer, ``read`` whole (or up to its first event) to be judged.

        The client finds the content read and does not read the stream again. A body past
        ``max_body`` is handed on unread (judged by its status), held to be closed if another
        attempt follows; so is an event stream of results, from its first event on.
        """
        if not read:
            attempt.held.append(response)
            if head is not None and head.parsed is not None:
                response.extensions[HEAD] = head.parsed
        elif attempt.request.method == "GET":
            self._learn_card(attempt.request, response)
        else:
            self._learn_mark(attempt.request, response)
        return response

    def _non_blocking(
        self, request: httpx.Request, parsed: Callable[[], object]
    ) -> tuple[HttpLookup, httpx.Request] | None:
        """The look-up of a unary send to go without blocking, and the copy that is sent.

        See `ExactlyOnce.non_blocking`. None for every other request, and when sends block:
        by default, sends block unless the agent's tasks cannot be listed (then a lost answer
        could never be found).
        """
        guard = self.guard
        wanted = guard.exactly_once.non_blocking
        if wanted is False or (
            wanted is None
            and not (guard.unlisted_known and guard.facts(agent_of(request)).unlisted)
        ):
            return None
        if not isinstance(request.stream, httpx.ByteStream):
            return None
        body = parsed()
        if _operation(request, body) != "SendMessage" or not _message_id("SendMessage", body):
            return None
        try:
            finder = HttpLookup(request, body)
        except CannotLookError:
            return None
        copy = finder.non_blocking()
        return None if copy is None else (finder, copy)

    def _waiting(
        self,
        finder: HttpLookup,
        response: httpx.Response,
        deadline_at: float | None,
    ) -> Generator[Effect, Any, dict[str, Any]] | None:
        """The reads that wait for the task a send without blocking answered with to settle.

        None when the answer holds no task still working (it is the answer as it is).
        """
        task = finder.task_of(response)
        sent = sent_message(finder.body, None)
        if task is None or task_view(task).settled or sent is None:
            return None
        reader = self._reader(finder, sent, _peer_of(finder.request), deadline_at)
        return reader.settling(task)

    def _failed(self, failure: CallFailed) -> httpx.Response:
        """Hand back what the last attempt produced (or raise, when asked to)."""
        if self.raise_failures:
            raise failure
        if isinstance(failure.result, httpx.Response):
            if failure.record is not None:
                failure.result.extensions[RECORD] = failure.record
            return failure.result
        cause = failure.__cause__
        if cause is not None:
            raise cause
        raise failure


class GuardTransport(_TransportBase, httpx.BaseTransport):
    """An httpx transport that runs every request through a `Guard`.

    Mount it in any httpx client, and so under any A2A client built on httpx::

        client = httpx.Client(transport=GuardTransport(Guard()))

    Each request is sent by ``inner`` (httpx's own transport by default) and judged: JSON-RPC
    error bodies on HTTP 200 included. A retry resends the identical request (the same bytes).
    It never retries a request whose body is a stream it cannot replay, nor a SendMessage
    whose message has no messageId. Successful event streams are handed over unread.

    A SendMessage whose answer was lost is looked up first, with the same headers, through
    ``inner`` (see `a2a_client_errors._lookup`): found, the task is the answer (a unary send's
    once it settles, as a blocking send's would be; a stream's subscribed to while it works);
    resent (the same bytes) only on the agent's word (see `ExactlyOnce`); otherwise
    `OutcomeUnknown`. A unary send may go
    without blocking (`ExactlyOnce.non_blocking`): the agent answers with its task at once,
    the transport reads it until it settles, and the caller gets what the blocking send would
    have answered.

    When the final decision is not ok, the transport hands back the last response (or raises
    the last transport exception) as the client would have seen it without a guard, so the
    client's own error handling runs; hooks have seen every decision. With
    ``raise_failures=True`` it raises the `CallFailed` instead.

    No redirect carries a request to another origin: a 3xx answer whose ``Location`` points
    elsewhere (301, 302, 303, 307, 308) is a ``fix_request`` naming it
    (``decision.error.location``), raised as `FixRequestNeeded` with ``raise_failures=True``;
    without, it is handed back with its ``Location`` taken out, so that a client with
    ``follow_redirects=True`` answers with it instead of following it (see
    `a2a_client_errors._redirects`). A redirect on the request's own origin is handed back
    as it came: the client follows it or not, as it would without a guard.
    """

    def __init__(
        self,
        guard: Guard,
        inner: httpx.BaseTransport | None = None,
        *,
        raise_failures: bool = False,
    ) -> None:
        super().__init__(guard, raise_failures=raise_failures)
        self.inner = inner if inner is not None else httpx.HTTPTransport()

    def _exchange(self, need: _Need) -> Any:
        """The transport's one sender: every request it sends, through ``inner``, sync.

        A call's attempts (`_Attempt`), and its reader's reads, subscription and closes.
        """
        if isinstance(need, _Attempt):
            held = need.held
            while held:  # the previous attempt's answer, left unread: this attempt replaces it
                held.pop().close()
            response = self.inner.handle_request(self._bound(need))
            head = self._opened(need.request, response)
            clock = self.guard.clock
            limit = self._max_answer
            read = read_within(response, limit, deadline_at=need.until, clock=clock, enough=head)
            return self._attempted(need, response, read, head)
        if isinstance(need, _Close):
            need.response.close()
            return None
        if isinstance(need, _Open):
            return self.inner.handle_request(need.request)
        request, timeout = need.request, need.timeout
        clock = self.guard.clock
        if timeout is not None:
            _bound_to(request, timeout)
        response = self.inner.handle_request(request)
        try:
            until = None if timeout is None else clock() + timeout
            limit = self._max_answer if need.limit is None else need.limit
            read = read_within(response, limit, deadline_at=until, clock=clock)
        finally:
            response.close()
        return response, read

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` under the guard."""
        timeout = request.extensions.get("timeout", _UNSET)
        try:
            return self._handle(request)
        finally:
            _restore(request, timeout)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        body = _parsed_once(request)
        start, deadline_at, until = self._window(request, body)
        finder, sent, body, plain = self._opening(request, body)
        args: tuple[Any, ...] = (_Attempt(sent, until, []),)
        first = None
        if plain is not None:  # unwatched: a plain success needs no more than its credit
            first = attempt_once(self._exchange, args, NO_KWARGS)
            if self._credited(request, body, first, plain, start):
                return first.value  # type: ignore[no-any-return]
        call = self._begin(sent, body, plain, start, deadline_at)
        try:
            response = call.run(self._exchange, args, first=first)
        except CallFailed as failure:
            return self._failed(failure)
        if finder is not None:  # answered as the blocking send would have been
            waiting = self._waiting(finder, response, deadline_at)
            if waiting is not None:
                response = finder.answer(drive(waiting, self.guard, _peer_of(sent)))
        return self._recorded(call, response)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


class AsyncGuardTransport(_TransportBase, httpx.AsyncBaseTransport):
    """The async twin of `GuardTransport`, for ``httpx.AsyncClient`` (and a2a-sdk's clients)."""

    def __init__(
        self,
        guard: Guard,
        inner: httpx.AsyncBaseTransport | None = None,
        *,
        raise_failures: bool = False,
    ) -> None:
        super().__init__(guard, raise_failures=raise_failures)
        self.inner = inner if inner is not None else httpx.AsyncHTTPTransport()

    async def _exchange(self, need: _Need) -> Any:
        """`GuardTransport._exchange`, with async I/O."""
        if isinstance(need, _Attempt):
            held = need.held
            while held:  # the previous attempt's answer, left unread: this attempt replaces it
                await held.pop().aclose()
            response = await self.inner.handle_async_request(self._bound(need))
            head = self._opened(need.request, response)
            clock = self.guard.clock
            limit = self._max_answer
            until = need.until
            read = await aread_within(response, limit, deadline_at=until, clock=clock, enough=head)
            return self._attempted(need, response, read, head)
        if isinstance(need, _Close):
            await need.response.aclose()
            return None
        if isinstance(need, _Open):
            return await self.inner.handle_async_request(need.request)
        request, timeout = need.request, need.timeout
        clock = self.guard.clock
        if timeout is not None:
            _bound_to(request, timeout)
        response = await self.inner.handle_async_request(request)
        try:
            until = None if timeout is None else clock() + timeout
            limit = self._max_answer if need.limit is None else need.limit
            read = await aread_within(response, limit, deadline_at=until, clock=clock)
        finally:
            await response.aclose()
        return response, read

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` under the guard."""
        timeout = request.extensions.get("timeout", _UNSET)
        try:
            return await self._handle(request)
        finally:
            _restore(request, timeout)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        body = _parsed_once(request)
        start, deadline_at, until = self._window(request, body)
        finder, sent, body, plain = self._opening(request, body)
        args: tuple[Any, ...] = (_Attempt(sent, until, []),)
        first = None
        if plain is not None:  # unwatched: a plain success needs no more than its credit
            left = None if until is None else max(0.0, until - self.guard.clock())
            first = await aattempt_once(self._exchange, args, None, left)
            if self._credited(request, body, first, plain, start):
                return first.value  # type: ignore[no-any-return]
        call = self._begin(sent, body, plain, start, deadline_at)
        try:
            response = await call.arun(self._exchange, args, first=first)
        except CallFailed as failure:
            return self._failed(failure)
        if finder is not None:  # answered as the blocking send would have been
            waiting = self._waiting(finder, response, deadline_at)
            if waiting is not None:
                response = finder.answer(await adrive(waiting, self.guard, _peer_of(sent)))
        return self._recorded(call, response)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()
