"""Guard every operation of an a2a-sdk ``Client``, streaming included (extra ``a2a``).

`guard_client` wraps a client built by a2a-sdk's ``ClientFactory`` (either line, 1.x or 0.3;
any binding: JSON-RPC, HTTP+JSON, gRPC) in a `GuardedClient` with the same methods; what
differs between the lines is asked of the compatibility layer's ``line()``. Each call goes
through a `Guard`: transient failures are retried with the same request, every other decision
is raised as the `CallFailed` subclass that names it, chained from a2a-sdk's own exception.

Streams (``send_message``, ``subscribe``) follow the protocol's advice (§3.5.2, §3.1.6):

* a failure before the first event is judged like any call, and retried with the same request;
* after the first event nothing is resent: an interruption (an error the policy would retry,
  or a stream that closes before the task reached a terminal or interrupted state) is resumed
  with ``SubscribeToTask``; when the task has meanwhile become terminal (the peer answers
  ``UNSUPPORTED_OPERATION``, or the client knows the peer cannot stream), the stream ends with
  the task read by ``GetTask``;
* any other error mid-stream is raised as its `CallFailed`.

What the agent sent is judged, not what a2a-sdk kept of it: the answers of the httpx clients
the a2a-sdk client sends with are read during each attempt (`_answers`), and the call error
they hold wins over a2a-sdk's exception (a2a-go's -31401 is ``auth``, its refused HTTP+JSON
stream ``degrade``). A stream refused with an error that names no better reason (a2a-java's
INVALID_REQUEST) is read against the agent card read again, once per call.

A message without a ``message_id`` gets one (a UUID) before the first attempt, so that every
resend carries the same one. The same messageId is not enough to make a resend safe (no
official A2A server deduplicates by it): when an attempt of ``send_message`` may have been
processed (its answer lost, a timeout, an internal error), the task it may have made is looked
for first with the client's own ``get_task``/``list_tasks`` (see `a2a_client_errors._lookup`).
Found, it is the answer (a stream resumes it by subscription); not there, the same message is
resent; the look-up impossible (a new message to an A2A 0.3 agent: no ListTasks),
`OutcomeUnknown` is raised and nothing is resent.

When the agent card lists several interfaces (JSON-RPC, HTTP+JSON, gRPC, other URLs), each
is its own peer (its own budget and breaker), and a call that cannot go over the preferred
one (its breaker is open, or nothing reached it: refused, DNS, connect timeout) goes over the
next one the client can speak, with the same request; the next call starts again with the
preferred one. Only interfaces on the preferred one's origin (or on an origin the caller names)
are failed over to, so the client's credentials go only where the caller meant them to, and a
call goes over at most ``max_interfaces`` of them (see
`a2a_client_errors.integrations.a2a_sdk._interfaces`).

No redirect carries a call to another origin either, whatever the httpx client's
``follow_redirects``: the httpx clients the a2a-sdk client sends with get a response hook that
refuses every redirect elsewhere (``_interfaces.keep_home``), and the call ends in
`FixRequestNeeded` naming where the redirect pointed (``error.location``). A redirect on the
agent's own origin is followed when the httpx client follows redirects.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections import OrderedDict
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import httpx

from a2a_client_errors._card_claims import CardClaims, read_card_claims, unsupported_by_card
from a2a_client_errors._engine import AttemptCutShortError, Onward, adrive
from a2a_client_errors._errors import CallError, ErrorKind, Source, WireShape, safe_peer
from a2a_client_errors._failures import CallFailed, RetryExhausted
from a2a_client_errors._guard import CallShape, Guard, GuardedCall, failure_for
from a2a_client_errors._journal import Made, entry_for, task_made
from a2a_client_errors._lookup import (
    Found,
    SentMessage,
    Unresolved,
    find_sent,
    follow_task,
    learn_mark,
)
from a2a_client_errors._normalize import PeerAnswerError, UnreadableAnswerError, normalize
from a2a_client_errors._outcomes import TaskOutcome, task_outcome
from a2a_client_errors._reasons import Action, Reason, TransportFailure
from a2a_client_errors._streaming import interruption
from a2a_client_errors.integrations.a2a_sdk._answers import read_answers, reading, unread
from a2a_client_errors.integrations.a2a_sdk._compat import (
    UnsupportedSdkError,
    client_card,
    client_config,
    line,
    require_supported,
    set_client_card,
)
from a2a_client_errors.integrations.a2a_sdk._connect import connect_first, connecting
from a2a_client_errors.integrations.a2a_sdk._factory import wrapping_factory
from a2a_client_errors.integrations.a2a_sdk._handlers import (
    LOST_RACE,
    DecisionHandlers,
    Polling,
    Situation,
    poll_task,
)
from a2a_client_errors.integrations.a2a_sdk._interfaces import (
    MAX_INTERFACES,
    Interface,
    LeftOut,
    Route,
    keep_home,
    named_origins,
)
from a2a_client_errors.integrations.a2a_sdk._lookup import SdkLookup, sent_of, task_view

if TYPE_CHECKING:
    import contextlib
    from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Mapping
    from types import TracebackType

    from typing_extensions import Self

    from a2a_client_errors._effects import Effect
    from a2a_client_errors._journal import Entry
    from a2a_client_errors._policy import Decision
    from a2a_client_errors.integrations.a2a_sdk._answers import Read

__all__ = [
    "LOST_RACE",
    "DecisionHandlers",
    "GuardedClient",
    "Interface",
    "Polling",
    "Situation",
    "UnsupportedSdkError",
    "guard_client",
    "guarded_factory",
    "poll_task",
    "with_message_id",
]

_TASKS_REMEMBERED: Final = 1024
WELL_KNOWN_CARD_PATH: Final = "/.well-known/agent-card.json"
_log = logging.getLogger("a2a_client_errors")


_DEFAULT_HANDLERS: Final = DecisionHandlers()
_NO_REQUEST: Final = object()  # a method called without a request (a2a-sdk 0.3's get_card)
_UNREAD: Final = object()  # no card read yet (None is a card held: none)
NO_OPTIONS: Final[Mapping[str, Any]] = MappingProxyType({})
Skill: TypeAlias = "str | Callable[[Any], str | None] | None"
"""What names the skill of a client's tasks (see `guard_client`)."""


def guard_client(
    client: Any,
    guard: Guard | None = None,
    *,
    peer: str | None = None,
    max_reconnects: int = 3,
    handlers: DecisionHandlers | None = _DEFAULT_HANDLERS,
    card_url: str | None = None,
    failover: bool = True,
    factory: Any = None,
    failover_origins: Iterable[str] = (),
    max_interfaces: int = MAX_INTERFACES,
    skill: Skill = None,
) -> GuardedClient:
    """Wrap an a2a-sdk ``Client`` so that every operation goes through ``guard``.

    The httpx clients ``client`` sends with get one response hook, from then on: no redirect
    they receive is followed to another origin (one on the request's own origin is followed
    when the httpx client follows redirects). Nothing else of theirs changes.

    Args:
        client: the a2a-sdk client (``ClientFactory(config).create(card)``).
        guard: the Guard (default: ``Guard()``).
        peer: the key of the peer's retry budget and breaker (default: the URL of the card's
            interface the client speaks). The card's other interfaces get their own keys
            (see `Interface`).
        max_reconnects: how many times one stream may be resumed after interruptions.
        handlers: what to do about decisions other than retry (see `DecisionHandlers`, and
            docs/a2a-sdk.md, "Decision handlers"); None raises every one of them.
        card_url: where the agent card is read again when the peer refuses the client's
            version, or a stream without saying it does not stream (default: the well-known
            path beside the card's first HTTP interface, under its path prefix, then at its
            origin).
        failover: whether a call that cannot go over the client's interface goes over the
            card's next interface the client can speak (its breaker open, or nothing sent).
        factory: what builds the clients of the other interfaces (an a2a-sdk
            ``ClientFactory``; default: one with the client's own configuration). Its
            ``create(card, interceptors)`` gets the card with that one interface and the
            client's interceptors.
        failover_origins: the origins other than the preferred interface's that calls may
            fail over to (``{"https://b.example"}``; a gRPC ``"host:port"`` as the card
            writes it). The client's credentials go with every call: by default a call goes
            only to interfaces on the preferred one's origin (scheme, host and port; see
            docs/a2a-sdk.md, "Failover across the card's interfaces").
        max_interfaces: the most interfaces one call goes over, the preferred one counted
            (the first ones the card lists after it).
        skill: the skill the tasks of this client's calls are told with to the Guard's task
            outcome hooks (the metrics' ``skill`` label; A2A tasks do not carry one): a
            string, or a function of each call's request giving one (or None). A send's own
            ``skill=`` comes first, then this, then the message metadata's ``"skill"``
            string; a task read later (GetTask, a subscription) keeps the skill its send was
            told with. Default: none (``"unknown"`` in the metrics).

    Raises:
        ImportError: a2a-sdk is not installed.
        UnsupportedSdkError: the installed a2a-sdk is not one of the versions supported
            (its message names the range; see docs/integrations.md), or lacks what the client is
            read for.
        TypeError: ``failover_origins`` is one string, or holds something else than strings;
            ``skill`` is neither a string nor callable.
        ValueError: an empty origin, or ``max_interfaces`` below 1.
    """
    require_supported()
    return GuardedClient(
        client,
        guard or Guard(),
        peer=peer,
        max_reconnects=max_reconnects,
        handlers=handlers,
        card_url=card_url,
        failover=failover,
        factory=factory,
        failover_origins=failover_origins,
        max_interfaces=max_interfaces,
        skill=skill,
    )


def guarded_factory(config: Any = None, guard: Guard | None = None, **options: Any) -> Any:
    """An a2a-sdk ``ClientFactory`` whose ``create`` returns `guard_client` clients.

    For frameworks that take a factory and build their clients themselves (google-adk's
    ``RemoteA2aAgent(a2a_client_factory=...)``). Every client it creates runs under the one
    ``guard`` (one retry budget and breaker per peer). It is a subclass of a2a-sdk's
    ``ClientFactory`` (see `a2a_client_errors.integrations.a2a_sdk._factory`).

    Args:
        config: the a2a-sdk ``ClientConfig`` (its ``httpx_client``, bindings, streaming);
            default: a2a-sdk's default configuration.
        guard: the Guard every client runs under (default: one ``Guard()`` for the factory).
        **options: more keyword arguments of `guard_client` (``handlers``, ``max_reconnects``,
            ``failover``, ``failover_origins``, ``max_interfaces``, ``skill``).

    Raises:
        ImportError: a2a-sdk is not installed.
        TypeError: ``options`` names ``peer``, ``card_url`` or ``factory`` (each client's own,
            read from its card), or what `guard_client` does not take.
    """
    per_client = sorted({"peer", "card_url", "factory"} & options.keys())
    if per_client:
        raise TypeError(f"guarded_factory sets no {per_client}: each client has its own")
    every = guard or Guard()
    return wrapping_factory(config, lambda client: guard_client(client, every, **options))


def with_message_id(message: Any, message_id: str) -> Any:
    """A copy of an a2a-sdk ``Message`` whose ``message_id`` is ``message_id``.

    For frameworks that build each message themselves, with a new random id, and let a hook
    hand back another (google-adk's ``RequestInterceptor.before_request``): give the copy a
    messageId that survives a crash (`a2a_client_errors.journal.message_id_for`), and a
    restarted process sends the same step under the same messageId, which the Guard's journal
    knows. ``message`` itself is never changed. Either line: 1.x's protobuf ``Message`` is
    copied whole; 0.3's pydantic one with ``model_copy`` (the copy shares its parts).

    Raises:
        ImportError: a2a-sdk is not installed.
        UnsupportedSdkError: the installed a2a-sdk is not one of the versions supported.
        TypeError: ``message`` is not a ``Message`` of the installed line, or ``message_id``
            is not a string.
        ValueError: ``message_id`` is empty.
    """
    given: object = message_id  # an untyped caller may pass anything
    if not isinstance(given, str):
        msg = f"message_id must be a string, not {type(given).__name__}"
        raise TypeError(msg)
    if not message_id:
        msg = "message_id must not be empty"
        raise ValueError(msg)
    require_supported()
    return line().with_message_id(message, message_id)


class GuardedClient:
    """An a2a-sdk ``Client`` whose every call runs under a `Guard` (see `guard_client`).

    Methods not listed here are delegated to the wrapped client as they are.

    Attributes:
        client: the wrapped a2a-sdk client.
        guard: the Guard.
        peer: the key of the peer's retry budget.
        handlers: the decision handlers (None: every decision but ok and retry is raised).
        card_url: where `read_card` reads the agent card ("" when the card names no HTTP
            interface and none was given).
        failover: whether calls go over the card's other interfaces when the client's cannot
            serve them (see `guard_client`).
        failover_origins: the other origins calls may fail over to (see `guard_client`).
        max_interfaces: the most interfaces one call goes over, the preferred one counted.
        skill: the skill task outcomes are told with (see `guard_client`).
        reads_answers: whether the agent's answers are read by the client itself (an httpx
            client was found to read them through); False: they are judged by what a2a-sdk
            raises (gRPC, whose status a2a-sdk keeps, or a transport that is not httpx).
    """

    def __init__(
        self,
        client: Any,
        guard: Guard,
        *,
        peer: str | None = None,
        max_reconnects: int = 3,
        handlers: DecisionHandlers | None = _DEFAULT_HANDLERS,
        card_url: str | None = None,
        failover: bool = True,
        factory: Any = None,
        failover_origins: Iterable[str] = (),
        max_interfaces: int = MAX_INTERFACES,
        skill: Skill = None,
    ) -> None:
        given: object = skill  # an untyped caller may pass anything
        if not (given is None or isinstance(given, str) or callable(given)):
            msg = f"skill is a string or a function of the request, not {type(skill).__name__}"
            raise TypeError(msg)
        self.client = client
        self.skill = skill
        self._skill_failed = False
        self.guard = guard
        self._given_peer = peer
        self.failover_origins = named_origins(failover_origins)
        self.max_interfaces = max_interfaces
        self._route = Route.of(
            client, peer, factory, origins=self.failover_origins, limit=max_interfaces
        )
        self._retired: list[Any] = []  # clients of a card read before: closed with this one
        self._serving: Interface | None = None
        self.peer = self._route.preferred.peer
        self.failover = failover
        self.max_reconnects = max_reconnects
        self.handlers = handlers
        self._card_url = card_url  # None: derived from the card held (see `card_url`)
        self._claims_of: tuple[Any, CardClaims | None] = (_UNREAD, None)  # (card, its claims)
        line().prepare_client(client)
        keep_home(client)  # no redirect carries a call to another origin
        # The agent's answers are read as they come: its bytes win over what a2a-sdk kept.
        self.reads_answers = read_answers(client)
        # Task outcomes for the Guard's hooks: each task's skill, and the final states told.
        self._skills: OrderedDict[str, str] = OrderedDict()
        self._told: OrderedDict[tuple[str, str], None] = OrderedDict()

    @property
    def card_url(self) -> str:
        """Where `read_card` reads first: the URL given, else beside the first HTTP interface."""
        return self._card_url if self._card_url is not None else _card_url_of(self.client)

    @card_url.setter
    def card_url(self, url: str) -> None:
        self._card_url = url

    @property
    def card(self) -> Any:
        """The agent card the wrapped client holds (None if it holds none)."""
        return client_card(self.client)

    async def read_card(self, timeout: float = 10.0) -> Any:
        """Read the agent card again from `card_url`, and hold it from now on.

        A card that cannot be read (no URL, a transport error, a body that is not a card, a
        redirect to another origin, which is never followed) is logged, and the card held so
        far is returned: the caller decides with what it has.

        Args:
            timeout: the longest the read may take, in seconds.
        """
        urls = [self._card_url] if self._card_url is not None else _card_urls_of(self.client)
        if not urls or not urls[0]:
            return self.card
        shared = getattr(client_config(self.client), "httpx_client", None)
        # The shared client refuses redirects elsewhere (`keep_home`); one of its own follows none.
        http = shared if shared is not None else httpx.AsyncClient(follow_redirects=False)
        card = None
        try:
            for url in urls:  # where the card came from first, then the origin's well-known
                try:
                    with unread():  # a card read during a call is not the call's answer
                        card = await asyncio.wait_for(line().fetch_card(http, url), timeout)
                except Exception as exc:  # this one failed: the next, or keep the card held
                    _log.warning("could not read the agent card again (%s)", type(exc).__name__)
                    continue
                break
        finally:
            if shared is None:
                await http.aclose()
        if card is None:
            _log.warning("no agent card could be read again; keeping the one held")
            return self.card
        if set_client_card(self.client, card):
            # The card's interfaces may have changed: the route is drawn again, on next use.
            self._retired.extend(self._route.built())
            self._route = Route.of(
                self.client,
                self._given_peer,
                self._route.factory,
                origins=self.failover_origins,
                limit=self.max_interfaces,
            )
        return card

    def _reading(self) -> contextlib.AbstractContextManager[Read]:
        """Read the agent's answers during one attempt (see `_answers`), within the deadline."""
        guard = self.guard
        until = None if guard.deadline is None else guard.clock() + guard.deadline
        return reading(guard.policy.limits, guard.clock, until)

    def answered(self, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """``method``, whose failure is what the agent's answer said when one was read.

        For a call made beside the client's own methods (a decision handler's fallback send
        through the client's transport): its failure is judged by the agent's bytes, as the
        client's own calls are (see `a2a_client_errors.integrations.a2a_sdk._answers`).
        """

        async def call(*args: Any, **kwargs: Any) -> Any:
            with self._reading() as read:
                try:
                    return await method(*args, **kwargs)
                except AttemptCutShortError:
                    raise
                except Exception as exc:
                    if read.error is None:
                        raise  # no answer read (or a result): what a2a-sdk raised is all
                    raise PeerAnswerError(read.error) from exc

        return call

    def _prepared(self, context: Any) -> Any:
        """The call context, with what the handlers declare from the card (see ``prepare``)."""
        if self.handlers is None:
            return context
        return self.handlers.prepare(self.card, context)

    async def _handled(
        self,
        failure: CallFailed,
        operation: str,
        request: Any,
        context: Any,
        options: Mapping[str, Any] = NO_OPTIONS,
    ) -> Any:
        """Hand a final decision to the handlers, or raise it (retries spent, or no handlers)."""
        if self.handlers is None or isinstance(failure, RetryExhausted):
            raise failure
        situation = Situation(failure, operation, request, self, context, options)
        return await self.handlers.handle(situation)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def find_sent(self, sent: SentMessage, *, context: Any = None) -> Any:
        """Look for the task a sent message made: the task, or raises `LookupError` why not.

        For an orchestrator that caught `OutcomeUnknown` (``failure.sent``) and looks again
        later. Uses the Guard's `ExactlyOnce` settings: it looks again and again, its reads
        retried as any read, for at most ``ExactlyOnce.timeout``. None only for an agent the
        Guard holds a listing contract for (`ExactlyOnce.listed_within`), when the task is
        absent that long after the message was sent (``sent.sent_at``, by the wall clock).
        """
        guard = self.guard
        settings = guard.exactly_once
        reader = self._lookup(context, sent)
        sent_at = sent.sent_at
        search = find_sent(
            sent,
            settings,
            reader.view,
            answers_with_messages=guard.facts(self.peer).answers_with_messages,
            listed_within=None if sent_at is None else settings.listing_contract(self.peer),
            since_lost=lambda: settings.wall_clock() - (sent_at or 0.0),
        )
        until = guard.clock() + guard.exactly_once.timeout
        reads = guard.reads(search, None, agent=self.peer, deadline_at=until, steps=reader.asking)
        result = await adrive(reads, guard, self.peer)
        if isinstance(result, Found):
            return result.value
        if isinstance(result, Unresolved):
            raise LookupError(result.why)
        if reader.elsewhere:
            raise LookupError("not there on another interface, which may keep its own tasks")
        return None

    def _lookup(
        self,
        context: Any,
        sent: SentMessage,
        here: Interface | None = None,
        finding: Callable[[Any, bool], Generator[Effect, Any, Any]] | None = None,
    ) -> SdkLookup:
        """The reads over the interface ``here`` first, then the route's others, in order."""
        route = self._route
        at = route.listed.index(here) if here in route.listed else 0
        order = [at, *(i for i in range(len(route.listed)) if i != at)] if self.failover else [0]
        clients = (route.client_at(i) for i in order[1:])  # built only when asked for
        return SdkLookup(
            route.client_at(at),
            context,
            sent,
            finding=finding,
            card=self.card,
            agent=route.listed[at].peer,
            others=(client for client in clients if client is not None),
            answered=self.answered,
        )

    async def _settled(
        self, task: Any, sent: SentMessage, context: Any, until: float | None
    ) -> Any:
        """`_settling`, carried out on its own (a task sent without blocking, once answered)."""
        return await adrive(self._settling(task, sent, context, until), self.guard, self.peer)

    def _settling(
        self,
        task: Any,
        sent: SentMessage,
        context: Any,
        until: float | None,
        *,
        reread: bool = False,
        follow: bool = True,
    ) -> Generator[Effect, Any, Any]:
        """The steps of ``task`` once settled (terminal or interrupted), read with GetTask.

        What a blocking send would have answered, for a task found by a look-up or sent
        without blocking. At ``until`` (the Guard's deadline) the latest task read is the
        answer, settled or not; a read that fails is retried until then. With ``reread`` (a
        task found in a listing, without artifacts) it is read once whole first; without
        ``follow``, that read is all. The reads are a wait's (`Guard.reads`), as effects of
        the call that found the task, or of `_settled`.
        """
        if task_view(task).settled and not reread:
            return task
        reader = self._lookup(context, sent)
        guard = self.guard
        search = follow_task(task, guard.exactly_once, task_view, reread=reread, follow=follow)
        # The wait's answer is the latest task read (`follow_task`), or ``task`` if none was.
        return (
            yield from guard.reads(
                search, None, agent=self.peer, deadline_at=until, wait=True, steps=reader.asking
            )
        )

    def _tell(
        self,
        outcome: TaskOutcome | None,
        operation: str,
        skill: str | None = None,
        *,
        fallback: str | None = None,
    ) -> None:
        """Tell the Guard's hooks about a task that reached a final state, once per state.

        Costs nothing when no hook observes task outcomes. The skill is remembered per task,
        so a later GetTask or subscription of the same task is told with it; ``fallback``
        (the client's `skill` for the call) names one the task was never told with.
        """
        if outcome is None or not self.guard.observers["on_task_outcome"]:
            return
        task_id = outcome.task_id
        if task_id:
            if skill:
                _remember(self._skills, task_id, skill)
            else:
                skill = self._skills.get(task_id)
        skill = skill or fallback
        if not outcome.is_final:
            return
        if task_id:
            key = (task_id, outcome.state)
            if key in self._told:
                return
            _remember(self._told, key, None)
        self.guard.record_task(outcome, skill=skill, peer=self.peer, operation=operation)

    def _skill_for(self, request: Any) -> str | None:
        """The skill this client names for a call's request (`guard_client`'s ``skill``).

        A function that fails, or gives something else than a non-empty string, names none
        (its failure logged once): a label never fails a call.
        """
        named = self.skill
        if named is None or isinstance(named, str):
            return named or None
        try:
            found = named(request)
        except Exception as exc:  # the caller's function: said once, never the call's failure
            if not self._skill_failed:
                self._skill_failed = True
                _log.warning("the skill function failed (%s)", type(exc).__name__)
            return None
        return found if isinstance(found, str) and found else None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the wrapped client, and those built for the card's other interfaces."""
        others, self._retired = [*self._retired, *self._route.built()], []
        try:
            await self.client.close()
        finally:
            for other in others:
                await _close_quietly(other)

    # --- interfaces -------------------------------------------------------------------------

    @property
    def interfaces(self) -> tuple[Interface, ...]:
        """The card's interfaces this client may call, the preferred first (see `Interface`)."""
        return self._route.listed

    @property
    def left_out(self) -> tuple[LeftOut, ...]:
        """The card's interfaces this client never calls: other origins, beyond the limit."""
        return self._route.left_out

    @property
    def serving(self) -> Interface | None:
        """The interface that served the last call that succeeded (None before one did)."""
        return self._serving

    def _served(self, interface: Interface) -> None:
        """Remember which interface served; a change is logged (back to the preferred too)."""
        if self._serving == interface:
            return
        before, self._serving = self._serving, interface
        if before is not None or interface.peer != self.peer:
            _log.info(
                "calls to %s are served over %s",
                safe_peer(self.peer),
                safe_peer(str(interface)),
            )

    async def _over_interfaces(
        self,
        attempt_for: Callable[[Any, Interface, bool], Onward],
        *,
        opened: Callable[[GuardedCall], None] | None = None,
    ) -> Any:
        """One guarded call over the card's interfaces, the preferred first, until one serves.

        ``attempt_for(client, interface, onward)`` gives the attempt over an interface. The
        engine moves the call on (`Guard.begin`'s ``fail_over``) only when nothing was sent
        over an interface (its breaker open, or the attempt did not reach it); anything else
        (an answer, an unknown outcome) stays where it happened, and so does every call when
        the route has one interface. ``opened`` is given the call before it runs.
        """
        route = self._route
        at = 0

        def over(index: int) -> Onward:
            return attempt_for(
                route.client_at(index),
                route.listed[index],
                self.failover and route.has_after(index),
            )

        def fail_over(_: Decision) -> Onward | None:
            nonlocal at
            following = route.next_after(at)
            if following is None:  # none could be built after all: a route of one
                return None
            at = following
            return over(following)

        first = over(0)
        call = self.guard.begin(peer=first.peer, shape=first.shape, fail_over=fail_over)
        if opened is not None:
            opened(call)
        result = await call.arun(first.fn, first.args, first.kwargs)
        self._served(route.listed[at])
        return result

    # --- unary operations -------------------------------------------------------------------

    def _refused_by_card(
        self, operation: str, request: Any = None, options: Mapping[str, Any] = NO_OPTIONS
    ) -> CallFailed | None:
        """The failure a call must meet by the card's capabilities (§3.3.4), if it must.

        Such a call is not sent: the decision is made from the card (source ``agent_card``).
        """
        capabilities = self._claims()
        if capabilities is None:
            return None
        asks_push = (
            operation == "SendMessage"
            and not capabilities.push_notifications
            and self._asks_for_push(request, options)
        )
        reason = unsupported_by_card(capabilities, operation, asks_push=asks_push)
        if reason is None:
            return None
        error = CallError(
            ErrorKind.PROTOCOL,
            reason,
            Source.AGENT_CARD,
            WireShape.NOT_SENT,
            message=f"the agent card declares no support for {operation}",
        )
        decision = self.guard.policy.decide(error, operation=operation)
        record = self.guard.observe(decision, peer=self.peer, operation=operation, ends=True)
        failure = failure_for(decision)(decision, attempts=0)
        failure.record = record
        return failure

    def _claims(self) -> CardClaims | None:
        """What the card held says the agent supports: read once per card object held.

        A card the client is given anew (`read_card`, a2a-sdk 0.3's ``get_card``) is read
        again; reading one costs microseconds that every call would otherwise pay.
        """
        card = self.card
        held, claims = self._claims_of
        if card is not held:
            claims = read_card_claims(card)
            self._claims_of = (card, claims)
        return claims

    def _streams(self) -> bool:
        """Whether the wrapped client sends messages as streams (its config and the card)."""
        config = client_config(self.client)
        capabilities = self._claims()
        streams = True if capabilities is None else capabilities.streaming
        return bool(getattr(config, "streaming", True) and streams)

    def _asks_for_push(self, request: Any, options: Mapping[str, Any]) -> bool:
        """Whether a SendMessage asks for push notifications (itself, or by client config)."""
        return line().asks_for_push(request, options, client_config(self.client))

    async def _unary(
        self,
        operation: str,
        method: Callable[..., Awaitable[Any]],
        request: Any,
        *,
        context: Any = None,
        by_card: bool = True,
        **kw: Any,
    ) -> Any:
        given = None if request is _NO_REQUEST else request  # what the handlers are shown
        refused = self._refused_by_card(operation) if by_card else None
        if refused is not None:
            handled = await self._handled(refused, operation, given, context, kw)
            return await handled if inspect.isawaitable(handled) else handled
        context = self._prepared(context)
        name = method.__name__
        args = () if request is _NO_REQUEST else (request,)

        def attempt_for(client: Any, interface: Interface, failover: bool) -> Onward:
            call = method if client is self.client else getattr(client, name)
            return Onward(
                interface.peer,
                self.answered(_read_by(connecting(client, call))),
                CallShape(operation, failover=failover),
                args,
                {"context": context, **kw},
            )

        try:
            result = await self._over_interfaces(attempt_for)
        except CallFailed as failure:
            handled = await self._handled(failure, operation, given, context, kw)
            result = await handled if inspect.isawaitable(handled) else handled
        if self.guard.observers["on_task_outcome"]:
            self._tell(task_outcome(result), operation, fallback=self._skill_for(given))
        return result

    async def get_task(self, request: Any, *, context: Any = None, **kwargs: Any) -> Any:
        """GetTask, guarded."""
        return await self._unary(
            "GetTask", self.client.get_task, request, context=context, **kwargs
        )

    async def list_tasks(self, request: Any, *, context: Any = None, **kwargs: Any) -> Any:
        """ListTasks, guarded."""
        return await self._unary(
            "ListTasks", self.client.list_tasks, request, context=context, **kwargs
        )

    async def cancel_task(self, request: Any, *, context: Any = None, **kwargs: Any) -> Any:
        """CancelTask, guarded."""
        return await self._unary(
            "CancelTask", self.client.cancel_task, request, context=context, **kwargs
        )

    async def create_task_push_notification_config(
        self, request: Any, *, context: Any = None
    ) -> Any:
        """CreateTaskPushNotificationConfig, guarded."""
        return await self._unary(
            "CreateTaskPushNotificationConfig",
            self.client.create_task_push_notification_config,
            request,
            context=context,
        )

    async def get_task_push_notification_config(self, request: Any, *, context: Any = None) -> Any:
        """GetTaskPushNotificationConfig, guarded."""
        return await self._unary(
            "GetTaskPushNotificationConfig",
            self.client.get_task_push_notification_config,
            request,
            context=context,
        )

    async def list_task_push_notification_configs(
        self, request: Any, *, context: Any = None
    ) -> Any:
        """ListTaskPushNotificationConfigs, guarded."""
        return await self._unary(
            "ListTaskPushNotificationConfigs",
            self.client.list_task_push_notification_configs,
            request,
            context=context,
        )

    async def delete_task_push_notification_config(
        self, request: Any, *, context: Any = None
    ) -> None:
        """DeleteTaskPushNotificationConfig, guarded."""
        await self._unary(
            "DeleteTaskPushNotificationConfig",
            self.client.delete_task_push_notification_config,
            request,
            context=context,
        )

    async def get_extended_agent_card(
        self, request: Any = None, *, context: Any = None, **kwargs: Any
    ) -> Any:
        """GetExtendedAgentCard, guarded (a2a-sdk 1.x)."""
        if request is None:
            request = line().extended_card_request()
        return await self._unary(
            "GetExtendedAgentCard",
            self.client.get_extended_agent_card,
            request,
            context=context,
            **kwargs,
        )

    # --- streams ----------------------------------------------------------------------------

    async def send_message(
        self, request: Any, *, context: Any = None, skill: str | None = None, **options: Any
    ) -> AsyncIterator[Any]:
        """SendMessage (streaming when both sides can), guarded; yields what the client yields.

        a2a-sdk 1.x: ``StreamResponse`` events; 0.3: ``(Task, update)`` pairs or a
        ``Message``. The message gets a ``message_id`` before the first attempt when it has
        none (on a copy: the caller's request is never changed).

        Args:
            request: the ``SendMessageRequest`` (1.x), or the ``Message`` (0.3).
            context: a2a-sdk's call context.
            skill: the skill the message is for, for the task outcome hooks (A2A tasks do not
                carry one); default: the message metadata's ``"skill"`` string, if any.
            **options: the client's other keyword arguments, passed on (0.3:
                ``configuration``, ``request_metadata``, ``extensions``).
        """
        guard = self.guard
        sdk = line()
        until = None if guard.deadline is None else guard.clock() + guard.deadline
        unary = not self._streams()
        blocking = sdk.blocking(request, options, client_config(self.client))
        # A unary send the caller wanted blocking answers once its task settles: one sent
        # without blocking, or found by a look-up, is read until then (and at most ``until``).
        waits = unary and blocking
        went_without = waits and self._sends_without_blocking(sdk.message_of(request))
        outgoing, options = sdk.outgoing(request, options, non_blocking=went_without)
        sent = sent_of(sdk.message_of(outgoing), guard.exactly_once.wall_clock())
        # What a journal records: the caller's message (the same in any process), its digest.
        entry = None if guard.journal is None else entry_for(sdk.message_of(request), self.peer)
        context = self._prepared(context)
        stream = _Stream(
            self,
            "SendMessage",
            lambda client: client.send_message(outgoing, context=context, **options),
            request=outgoing,
            options=options,
            context=context,
            skill=skill or self._skill_for(request) or sdk.skill_of(sdk.message_of(request)),
            unary=unary,
            sent=sent,
            entry=entry,
            settling=lambda task, reread: self._settling(
                task, sent, context, until, reread=reread, follow=waits
            ),
        )
        async for event in stream:
            answer = event
            if went_without and sdk.event_kind(event) == "task":
                before = sdk.event_task(event)
                task = await self._settled(before, sent, context, until)
                if task is not before:
                    answer = sdk.task_event(task)
                    stream._tell(answer)
            yield answer

    def _sends_without_blocking(self, message: Any) -> bool:
        """Whether a blocking unary send goes without blocking, its task read until it settles.

        Always or never by `ExactlyOnce.non_blocking`; by default, a new message to an agent
        whose tasks cannot be listed (A2A 0.3, or learnt unlisted), where its lost answer
        could not be resolved. A follow-up names its task, which GetTask can look in: it is
        sent as asked (sent without blocking, its interrupted task could be read back before
        the agent took the follow-up up, and be taken for the answer).
        """
        guard = self.guard
        wanted = guard.exactly_once.non_blocking
        if wanted is not None:
            return wanted
        if getattr(message, "task_id", None):
            return False
        if not line().lists_tasks:
            return True
        return guard.unlisted_known and guard.facts(self.peer).unlisted

    async def subscribe(self, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        """SubscribeToTask, guarded (a2a-sdk 1.x); yields ``StreamResponse``."""
        async for event in self._subscribed("subscribe", request, context, {}):
            yield event

    async def resubscribe(
        self, request: Any, *, context: Any = None, **options: Any
    ) -> AsyncIterator[Any]:
        """SubscribeToTask, guarded (a2a-sdk 0.3: ``tasks/resubscribe``); yields its events."""
        async for event in self._subscribed("resubscribe", request, context, options):
            yield event

    async def _subscribed(
        self, name: str, request: Any, context: Any, options: dict[str, Any]
    ) -> AsyncIterator[Any]:
        getattr(self.client, name)  # the other line's name: its AttributeError, not a call's
        context = self._prepared(context)
        stream = _Stream(
            self,
            "SubscribeToTask",
            lambda client: getattr(client, name)(request, context=context, **options),
            task_id=request.id,
            request=request,
            options=options,
            context=context,
        )
        async for event in stream:
            yield event

    # --- a2a-sdk 0.3's names ----------------------------------------------------------------

    async def set_task_callback(self, request: Any, *, context: Any = None, **kwargs: Any) -> Any:
        """CreateTaskPushNotificationConfig, guarded (a2a-sdk 0.3)."""
        return await self._unary(
            "CreateTaskPushNotificationConfig",
            self.client.set_task_callback,
            request,
            context=context,
            **kwargs,
        )

    async def get_task_callback(self, request: Any, *, context: Any = None, **kwargs: Any) -> Any:
        """GetTaskPushNotificationConfig, guarded (a2a-sdk 0.3)."""
        return await self._unary(
            "GetTaskPushNotificationConfig",
            self.client.get_task_callback,
            request,
            context=context,
            **kwargs,
        )

    async def get_card(self, *, context: Any = None, **kwargs: Any) -> Any:
        """The agent's card, extended when the agent offers one, guarded (a2a-sdk 0.3).

        a2a-sdk 0.3 reads the authenticated extended card when the card declares it, and
        returns the card it holds otherwise: a card without one is not a refusal here.
        """
        return await self._unary(
            "GetExtendedAgentCard",
            self.client.get_card,
            _NO_REQUEST,
            context=context,
            by_card=False,
            **kwargs,
        )


def _first_made(opened: Any) -> Made | None:
    """What a send made, read from its stream's first event (the journal's close)."""
    return task_made(opened[1]) if isinstance(opened, tuple) and len(opened) == 2 else None


class _Stream:
    """One guarded stream: first event under the Guard, then resumption by subscription."""

    def __init__(
        self,
        owner: GuardedClient,
        operation: str,
        open_stream: Callable[[Any], AsyncIterator[Any]],
        *,
        task_id: str = "",
        request: Any = None,
        options: Mapping[str, Any] = NO_OPTIONS,
        context: Any = None,
        skill: str | None = None,
        unary: bool = False,
        sent: SentMessage | None = None,
        entry: Entry | None = None,
        settling: Callable[[Any, bool], Generator[Effect, Any, Any]] | None = None,
    ) -> None:
        self.owner = owner
        self.sent = sent
        self.entry = entry  # what the Guard's journal records of a send, if it has one
        self.settling = settling  # a unary task found by a look-up, read until it settles
        self.operation = operation
        self.open_stream = open_stream
        self.task_id = task_id
        self.request = request
        self.options = options
        self.context = context
        self.skill = skill
        # A unary call seen as a stream of one: its answer is the whole result, final or not.
        self.unary = unary
        self.ended = False  # a Message answered, or the task reached a final state
        self.here: Interface | None = None  # the interface the attempt in flight goes over
        self.opened: GuardedCall | None = None  # the call that opened the stream
        self.card_read = False  # the card was read again for a refusal (once per call)
        guard = owner.guard
        self.until = None if guard.deadline is None else guard.clock() + guard.deadline

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            refused = self.owner._refused_by_card(self.operation, self.request, self.options)
            if refused is not None:
                raise refused
            iterator, first = await self._first(self.open_stream, self.operation)
        except CallFailed as failure:
            # Refused before any event: the handlers decide (a fallback event, or a raise).
            handled = await self.owner._handled(
                failure, self.operation, self.request, self.context, self.options
            )
            if hasattr(handled, "__aiter__"):  # the request, fixed and sent again
                async for event in handled:
                    self._tell(event)
                    yield event
            elif handled is not None:
                self._tell(handled)
                yield handled
            return
        try:
            reconnects = 0
            while iterator is not None:
                if first is not None:
                    self._track(first)
                    yield first
                try:
                    async for event in iterator:
                        self._track(event)
                        yield event
                except Exception as exc:  # judged below: resumed, or raised as its CallFailed
                    self._interrupted(exc)
                if self.ended:
                    return
                reconnects += 1
                if not self.task_id or reconnects > self.owner.max_reconnects:
                    # Nothing to resume (no task named), or resumed enough: an interruption,
                    # the call's end (told once, as a failed call).
                    given_up = interruption(self.operation)
                    peer = self.owner.peer if self.here is None else self.here.peer
                    self.owner.guard.end_call(given_up, peer=peer, operation=self.operation)
                    raise given_up
                iterator, first = await self._resume()
            if first is not None:  # the task, read by GetTask once the stream could not resume
                self._track(first)
                yield first
        finally:
            # The call that opened the stream ends with it: told as ok unless it failed.
            ending = sys.exc_info()[1]
            opened = self.opened
            if opened is not None and (ending is None or isinstance(ending, GeneratorExit)):
                opened.end()

    async def _first(
        self,
        open_stream: Callable[[Any], AsyncIterator[Any]],
        operation: str,
        *,
        empty_ok: bool = False,
    ) -> tuple[AsyncIterator[Any] | None, Any]:
        """Open the stream and read its first event, under the Guard (retried as a call).

        Over the preferred interface, or the next ones when nothing reached it.
        """
        owner = self.owner
        # A bare -32010 answering a send without the precondition is not draft 1.1's mismatch.
        precondition = (
            line().generation_precondition(self.request, self.options)
            if operation == "SendMessage"
            else None
        )

        def attempt_for(client: Any, interface: Interface, failover: bool) -> Onward:
            async def attempt() -> tuple[AsyncIterator[Any] | None, Any]:
                await connect_first(client)
                with owner._reading() as read:
                    return await self._opened(client, open_stream, operation, read, empty_ok)

            self.here = interface
            lookup = None
            if self.sent is not None and operation == "SendMessage":
                lookup = owner._lookup(self.context, self.sent, interface, self._finding)
            entry = self.entry
            if entry is not None and operation == "SendMessage":
                shape = CallShape(
                    operation,
                    sent=self.sent,
                    lookup=lookup,
                    failover=failover,
                    entry=replace(entry, peer=interface.url),
                    made=_first_made,
                    generation_precondition=precondition,
                )
            else:
                shape = CallShape(
                    operation,
                    sent=self.sent,
                    lookup=lookup,
                    failover=failover,
                    generation_precondition=precondition,
                )
            return Onward(interface.peer, attempt, shape)

        def opened(call: GuardedCall) -> None:
            call.holds_end = True  # a stream's call ends with the stream, not its first event
            if self.opened is None:
                self.opened = call

        result: tuple[AsyncIterator[Any] | None, Any] = await owner._over_interfaces(
            attempt_for, opened=opened
        )
        return result

    async def _opened(
        self,
        client: Any,
        open_stream: Callable[[Any], AsyncIterator[Any]],
        operation: str,
        read: Read,
        empty_ok: bool,
    ) -> tuple[AsyncIterator[Any] | None, Any]:
        """One attempt's stream and its first event; what the agent's answer said wins.

        a2a-sdk may make an event of an error (a2a-go's refused HTTP+JSON stream, read by
        a2a-sdk 1.x as one empty event), or keep less of it than it said: the call error read
        from the answer (`_answers`) is raised instead, chained from a2a-sdk's own exception.
        A refusal that names no better reason is first read against the card read again
        (`_against_fresh_card`).
        """
        iterator = _Reading(open_stream(client).__aiter__())
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            if read.error is not None:
                raise PeerAnswerError(await self._against_fresh_card(read.error)) from None
            if empty_ok:
                return None, None
            # No event at all is no answer: never a success with nothing in it.
            msg = f"the {operation} stream ended without one event"
            raise UnreadableAnswerError(msg) from None
        except AttemptCutShortError:
            raise
        except Exception as exc:
            limits = self.owner.guard.policy.limits
            said = read.error or normalize(exc, limits=limits, operation=operation)
            error = None if said is None else await self._against_fresh_card(said)
            if read.error is None and error is said:
                raise  # nothing read, nothing learnt: a2a-sdk's exception, judged as it is
            assert error is not None  # noqa: S101 (read.error, or an error the card changed)
            raise PeerAnswerError(error) from exc
        if read.error is not None:  # an event a2a-sdk made of an error
            await iterator.aclose()
            raise PeerAnswerError(await self._against_fresh_card(read.error))
        return iterator, first

    async def _against_fresh_card(self, error: CallError) -> CallError:
        """A stream's refusal read against the agent's card read again, once per call.

        An agent that refuses a stream without saying UNSUPPORTED_OPERATION (a2a-java
        1.2.0.Final answers INVALID_REQUEST to a stream when its card says it does not
        stream) may have changed since the client read its card: the card is read again
        (`GuardedClient.read_card`, within the call's deadline) and learnt by the Guard. When
        it no longer claims streaming, the refusal is UNSUPPORTED_OPERATION (``degrade``,
        source ``agent_card``: the non-streaming send is the way on); otherwise ``error``
        stands, as the agent said it.
        """
        if self.card_read or not self._streams() or not _doubtful_refusal(error):
            return error
        self.card_read = True
        owner = self.owner
        guard = owner.guard
        timeout = _CARD_TIMEOUT
        if self.until is not None:
            timeout = min(timeout, max(0.0, self.until - guard.clock()))
        held = owner.card
        card = await owner.read_card(timeout=timeout)
        claims = read_card_claims(card)
        if card is held or claims is None:
            return error  # not read again (logged): nothing new is known
        guard.learn_card(card, peer=owner.peer if self.here is None else self.here.peer)
        reason = unsupported_by_card(claims, _STREAMING_OPERATIONS[self.operation])
        if reason is None:
            return error
        return replace(error, kind=ErrorKind.PROTOCOL, reason=reason, source=Source.AGENT_CARD)

    def _streams(self) -> bool:
        """Whether this call asked the agent for a stream (not a unary send)."""
        return self.operation in _STREAMING_OPERATIONS and not self.unary

    def _finding(
        self, task: Any, whole: bool
    ) -> Generator[Effect, Any, tuple[AsyncIterator[Any] | None, Any]]:
        """The stream that the task a look-up found stands for (its first event, the task).

        A unary answer is the task, once it settles when the caller wanted a blocking send
        (`GuardedClient.send_message`), its reads steps of the call that found it; a stream
        still working goes on by subscription, as after an interruption.
        """
        outcome = task_outcome(task)
        settling = self.settling
        if settling is not None and (self.unary or (outcome is not None and outcome.is_final)):
            task = yield from settling(task, not whole)  # a listing leaves artifacts out
        first = line().task_event(task)
        outcome = task_outcome(first)
        if self.unary or (outcome is not None and outcome.is_final):
            return None, first
        return _Ended(), first

    def _interrupted(self, exc: Exception) -> None:
        """An error after the first event: resume only what is an interruption, else raise."""
        error = normalize(exc, limits=self.owner.guard.policy.limits)
        if error is None or (
            error.kind is ErrorKind.TRANSPORT and error.transport is TransportFailure.UNKNOWN
        ):
            raise exc
        owner = self.owner
        decision = owner.guard.policy.decide(error, operation=self.operation)
        peer = owner.peer if self.here is None else self.here.peer  # the interface streaming
        ends = not (decision.action is Action.RETRY and self.task_id)  # else it is resumed
        record = owner.guard.observe(decision, peer=peer, operation=self.operation, ends=ends)
        if not ends:
            return
        failure = failure_for(decision)(decision)
        failure.record = record
        raise failure from exc

    async def _resume(self) -> tuple[AsyncIterator[Any] | None, Any]:
        """Subscribe to the task again; when it is terminal, read it with GetTask instead."""
        sdk = line()
        try:
            iterator, first = await self._first(
                lambda client: sdk.subscribe(client, self.task_id, self.context),
                "SubscribeToTask",
                empty_ok=True,  # nothing to follow: the task is read with GetTask below
            )
        except NotImplementedError:
            iterator, first = None, None  # the client knows the peer cannot stream
        except CallFailed as failed:
            if failed.reason != Reason.UNSUPPORTED_OPERATION:
                raise
            iterator, first = None, None  # terminal meanwhile: subscribing is refused
        if iterator is not None or first is not None:
            return iterator, first
        task = await self.owner.get_task(sdk.task_request(self.task_id), context=self.context)
        self.ended = True
        return None, sdk.task_event(task)

    def _track(self, event: Any) -> None:
        """Follow the task's id, and whether it reached a final state, through the events.

        A send's answers also teach what the agent answers messages with (`AgentFacts`).
        """
        kind = line().event_kind(event)
        if self.operation == "SendMessage" and kind is not None:
            peer = self.owner.peer if self.here is None else self.here.peer
            facts = self.owner.guard.facts(peer)
            if kind == "message":
                facts.answers_with_messages = True
            else:
                facts.answers_with_tasks = True
            learn_mark(facts, event)  # the agent's own word that it deduplicates
        if self.unary or kind == "message":
            # A unary answer is the whole result; a stream that answers with a Message
            # carries only that one.
            self.ended = True
            self._tell(event)  # a unary answer may be a task: its outcome, for the hooks
            return
        outcome = task_outcome(event)
        if outcome is not None:
            self.task_id = outcome.task_id or self.task_id
            self.ended = self.ended or outcome.is_final
            self.owner._tell(outcome, self.operation, self.skill)

    def _tell(self, event: Any) -> None:
        """An event not tracked as a stream's (a unary answer, a handler's): its outcome."""
        if self.owner.guard.observers["on_task_outcome"]:
            self.owner._tell(task_outcome(event), self.operation, self.skill)


_CARD_TIMEOUT: Final = 10.0
"""The longest a card read again for a refused stream takes (less when the deadline is near)."""
_STREAMING_OPERATIONS: Final = {
    "SendMessage": "SendStreamingMessage",
    "SubscribeToTask": "SubscribeToTask",
}
"""The guarded client's streaming operations, by the name the card's claims are read for."""
_DOUBTFUL: Final = frozenset(
    {Reason.INVALID_REQUEST, Reason.METHOD_NOT_FOUND, Reason.INTERNAL_ERROR}
)
_REFUSING_STATUSES: Final = frozenset({404, 405, 500, 501})
_REFUSING_GRPC: Final = frozenset({"UNIMPLEMENTED", "INTERNAL", "UNKNOWN"})


def _doubtful_refusal(error: CallError) -> bool:
    """Whether a refused stream's error names no better reason than a card could give.

    INVALID_REQUEST (a2a-java), METHOD_NOT_FOUND, an internal error, or no reason at all on
    HTTP 404/405/500/501 or gRPC UNIMPLEMENTED/INTERNAL/UNKNOWN; never an auth failure, a
    transport failure, nor a reason that says what to do (a version, an extension, a task).
    """
    if error.kind is not ErrorKind.PROTOCOL:
        return False
    if error.reason is None:
        return error.http_status in _REFUSING_STATUSES or error.grpc_status in _REFUSING_GRPC
    return error.reason in _DOUBTFUL


_READERS: Final = ("a2a.", "google.protobuf.", "pydantic.", "pydantic_core.")
"""The modules that read a peer's answer into a2a-sdk's types: an exception raised in them is
the answer's fault (it does not parse, or does not validate), not the caller's."""
_READ_ERRORS: Final = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def _from_reading(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a2a-sdk read a peer's answer (see `_READERS`)."""
    if not isinstance(exc, _READ_ERRORS):
        return False
    # The innermost frame outside the standard library decides: a parser's (a2a-sdk,
    # protobuf, pydantic) makes it the answer's fault, even when ``_strptime`` raised it.
    frame = exc.__traceback__
    decisive = ""
    while frame is not None:
        module = str(frame.tb_frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] not in sys.stdlib_module_names:
            decisive = module
        frame = frame.tb_next
    return decisive.startswith(_READERS)


def _unreadable(exc: BaseException) -> UnreadableAnswerError:
    """The peer's broken answer, with the SDK's complaint (its class and text, capped)."""
    text = f"a2a-sdk could not read the answer: {type(exc).__name__}: {exc}"
    return UnreadableAnswerError(text[:_COMPLAINT])


_COMPLAINT: Final = 512


def _read_by(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``method``, whose failures to read the peer's answer are the peer's (`_from_reading`)."""

    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except _READ_ERRORS as exc:
            if _from_reading(exc):
                raise _unreadable(exc) from exc
            raise

    return call


class _Reading:
    """A stream of a2a-sdk events whose failures to read an event are the peer's."""

    def __init__(self, iterator: AsyncIterator[Any]) -> None:
        self.iterator = iterator

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.iterator.__anext__()
        except _READ_ERRORS as exc:
            if _from_reading(exc):
                raise _unreadable(exc) from exc
            raise

    async def aclose(self) -> None:
        """Close the stream under it, if it can be closed."""
        close = getattr(self.iterator, "aclose", None)
        if close is not None:
            await close()


class _Ended:
    """A stream that has ended: what is left of one whose first answer was lost."""

    def __aiter__(self) -> _Ended:
        return self

    async def __anext__(self) -> Any:
        raise StopAsyncIteration


async def _close_quietly(client: Any) -> None:
    """Close a client built for another interface; one that will not close is logged."""
    try:
        await client.close()
    except Exception as exc:  # it keeps no other open
        _log.warning("an interface's client did not close (%s)", type(exc).__name__)


def _remember(memory: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    """Keep ``key`` in a bounded memory, forgetting the oldest entries first."""
    memory[key] = value
    memory.move_to_end(key)
    if len(memory) > _TASKS_REMEMBERED:
        memory.popitem(last=False)


def _card_urls_of(client: Any) -> list[str]:
    """Where the card may be read again: beside the first HTTP interface, then at its origin.

    An agent served under a path prefix (``https://host/a/jsonrpc``) publishes its card under
    that prefix (``https://host/a/.well-known/agent-card.json``), not at the site root.
    """
    for interface in line().interfaces(client_card(client)):
        url = httpx.URL(interface.url)
        if url.scheme in {"http", "https"} and url.host:
            prefix = url.path.rstrip("/").rpartition("/")[0]
            urls = [
                str(url.copy_with(path=prefix + WELL_KNOWN_CARD_PATH, query=None, fragment=None)),
                str(url.copy_with(path=WELL_KNOWN_CARD_PATH, query=None, fragment=None)),
            ]
            return list(dict.fromkeys(urls))
    return []


def _card_url_of(client: Any) -> str:
    """Where the card is read again first (see `_card_urls_of`), or ""."""
    urls = _card_urls_of(client)
    return urls[0] if urls else ""
