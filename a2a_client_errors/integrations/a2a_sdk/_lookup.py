"""The look-up of an a2a-sdk SendMessage whose answer was lost, through the same client.

`SdkLookup` is the `a2a_client_errors._lookup.ReadSteps` of the guarded a2a-sdk client: it
asks the queries of `a2a_client_errors._lookup.find_sent` (and `follow_task`) with the
wrapped client's own ``get_task`` and ``list_tasks`` (so on the binding the client speaks,
JSON-RPC, HTTP+JSON or gRPC, with its interceptors and credentials), one request each. Its
reads are steps: each request is an `Exchange` carried out by its one sender (`SdkLookup.send`),
beside every other effect of the call, by the engine's driver. The Guard retries a failed read
itself, paid for from the peer's budget, within the deadline.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, NamedTuple

from a2a_client_errors._breaker import peer_unwell
from a2a_client_errors._effects import Effect, Exchange
from a2a_client_errors._lookup import (
    CardQuery,
    GetTaskQuery,
    ListTasksQuery,
    ReadFailedError,
    SentMessage,
    TaskView,
)
from a2a_client_errors._normalize import normalize
from a2a_client_errors._outcomes import task_outcome
from a2a_client_errors._reasons import Reason
from a2a_client_errors.integrations.a2a_sdk._compat import line

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator, Iterable

__all__ = ["Query", "SdkLookup", "sent_of", "task_view"]


def sent_of(message: Any, sent_at: float | None) -> SentMessage:
    """The identity of an a2a-sdk ``Message`` (it has a message_id by then)."""
    return SentMessage(
        message.message_id,
        message.context_id or None,
        message.task_id or None,
        sent_at,
    )


def task_view(task: Any) -> TaskView:
    """What a look-up reads of an a2a-sdk ``Task`` (of either line); never raises."""
    try:
        updated_at, history = line().task_parts(task)
        outcome = task_outcome(task)
        return TaskView(
            task.id,
            task.context_id,
            updated_at,
            history,
            outcome is not None and outcome.is_final,
        )
    except Exception:  # not a Task after all: a view that can show nothing
        return TaskView()


class Query(NamedTuple):
    """One read for `SdkLookup.send` to make: ``query`` asked of ``client``, within ``timeout``."""

    client: Any
    query: GetTaskQuery | ListTasksQuery
    timeout: float | None


class SdkLookup:
    """The reads of one look-up (or wait) through an a2a-sdk client (a `ReadSteps`).

    Args:
        client: the a2a-sdk client (unguarded).
        context: the call context the message was sent with.
        sent: the message looked for.
        finding: the steps of the call's answer, given the task found and whether it was
            read whole (by GetTask; a listing leaves artifacts out). None: the task itself.
        card: the agent card the client holds (a `CardQuery` is answered with it).
        agent: the key what is learnt of the agent is kept under (the interface's peer key).
        others: clients of the agent's other interfaces (taken one at a time, when needed):
            a query the client cannot get answered because its interface is unwell
            (`peer_unwell`: not reached, 5xx, UNAVAILABLE) is asked over the next, which
            answers the rest of the look-up; the look-up is then `elsewhere`.
        answered: wraps each read so that its failure is what the agent's answer said
            (the guarded client's ``answered``: its bytes, not what a2a-sdk kept of them).
            None: what a2a-sdk raises is judged.

    """

    view = staticmethod(task_view)

    def __init__(
        self,
        client: Any,
        context: Any,
        sent: SentMessage,
        *,
        finding: Callable[[Any, bool], Generator[Effect, Any, Any]] | None = None,
        card: Any = None,
        agent: str = "",
        others: Iterable[Any] = (),
        answered: Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]
        | None = None,
    ) -> None:
        self.client = client
        self._answered = answered
        self.context = context
        self.sent = sent
        self.elsewhere = False
        self.card = card
        self.agent = agent
        self._finding = finding
        self._others = iter(others)
        self._whole: Any = None  # the last task GetTask answered (read whole)

    def asking(
        self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None
    ) -> Generator[Effect, Any, Any]:
        """One read (`ReadSteps.asking`), over the next interface when this one is unwell.

        A `CardQuery` is answered with the card the client holds (nothing is sent).
        """
        if isinstance(query, CardQuery):
            return self.card
        while True:
            try:
                return (yield Exchange(Query(self.client, query, timeout), self.send))
            except ReadFailedError:  # noqa: PERF203 (one turn per interface, few)
                raise  # not asked at all (A2A 0.3 has no ListTasks): no interface answers it
            except Exception as exc:
                error = normalize(exc)
                following = None
                if error is not None and peer_unwell(error):
                    following = next(self._others, None)
                if following is None:
                    raise
                self.client, self.elsewhere = following, True  # a read: safe over any

    async def send(self, need: Query) -> Any:
        """The sender of this reader's `Exchange` effects: one request, within its time."""
        request = self._ask(need.client, need.query)
        timeout = need.timeout
        return await (request if timeout is None else asyncio.wait_for(request, timeout))

    def finding(self, task: Any) -> Generator[Effect, Any, Any]:
        """The steps of the call's answer, given the task found (`ReadSteps.finding`)."""
        if self._finding is None:
            return task
        return (yield from self._finding(task, task is self._whole))

    def _read(self, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        return method if self._answered is None else self._answered(method)

    async def _ask(self, client: Any, query: GetTaskQuery | ListTasksQuery) -> Any:
        sdk = line()
        if isinstance(query, GetTaskQuery):
            try:
                get = self._read(client.get_task)
                task = await get(sdk.task_request(query.task_id), context=self.context)
            except Exception as exc:
                error = normalize(exc)
                if (
                    error is not None
                    and error.reason is Reason.TASK_NOT_FOUND
                    and error.source.value != "status_fallback"
                ):
                    return None  # the agent says so: the task is not there
                raise
            self._whole = task
            return task
        return await self._read(functools.partial(sdk.list_tasks, client))(query, self.context)
