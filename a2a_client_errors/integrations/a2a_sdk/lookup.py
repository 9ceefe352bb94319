"""The look-up of an a2a-sdk SendMessage whose answer was lost, through the same client.

`SdkLookup` answers the queries of `a2a_client_errors.lookup.find_sent` with the wrapped
a2a-sdk client's own ``get_task`` and ``list_tasks`` (so on the binding the client speaks,
JSON-RPC, HTTP+JSON or gRPC, with its interceptors and credentials), never through the Guard:
a look-up that fails is a look-up that could not look, not a call to retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a_client_errors.breaker import peer_unwell
from a2a_client_errors.lookup import (
    ExactlyOnce,
    GetTaskQuery,
    ListTasksQuery,
    LookupResult,
    SentMessage,
    TaskPage,
    adrive,
    find_sent,
)
from a2a_client_errors.normalize import normalize
from a2a_client_errors.reasons import Reason

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

__all__ = ["SdkLookup", "message_ids", "sent_of"]


def sent_of(message: Any, sent_at: float | None) -> SentMessage:
    """The identity of an a2a-sdk ``Message`` (it has a message_id by then)."""
    return SentMessage(
        message.message_id,
        message.context_id or None,
        message.task_id or None,
        sent_at,
    )


def message_ids(task: Any) -> Iterable[str]:
    """The messageIds in an a2a-sdk ``Task``'s history."""
    return [message.message_id for message in task.history]


class SdkLookup:
    """The look-up of one sent message through an a2a-sdk client.

    Args:
        client: the a2a-sdk client (unguarded).
        types: a2a-sdk's ``a2a_pb2`` module.
        context: the call context the message was sent with.
        settings: the Guard's `ExactlyOnce`.
        sleep: the Guard's async sleep (for the pause before the second look).
        others: clients of the agent's other interfaces (taken one at a time, when needed):
            a query the client cannot get
            answered because its interface is unwell (`peer_unwell`: not reached, 5xx,
            UNAVAILABLE) is asked over the next, which answers the rest of the look-up.

    """

    def __init__(
        self,
        client: Any,
        types: Any,
        context: Any,
        settings: ExactlyOnce,
        sleep: Callable[[float], Awaitable[None]],
        *,
        others: Iterable[Any] = (),
    ) -> None:
        self.client = client
        self.types = types
        self.context = context
        self.settings = settings
        self.sleep = sleep
        self._others = iter(others)

    async def find(self, sent: SentMessage) -> LookupResult:
        """Look for the task ``sent`` made (`Found` holds the a2a-sdk ``Task``)."""
        return await adrive(find_sent(sent, self.settings, message_ids), self._answer, self.sleep)

    async def _answer(self, query: GetTaskQuery | ListTasksQuery) -> Any:
        while True:
            try:
                return await self._ask(self.client, query)
            except Exception as exc:  # noqa: PERF203 (one turn per interface, few)
                error = normalize(exc)
                following = None
                if error is not None and peer_unwell(error):
                    following = next(self._others, None)
                if following is None:
                    raise
                self.client = following  # a read: safe over any interface

    async def _ask(self, client: Any, query: GetTaskQuery | ListTasksQuery) -> Any:
        types = self.types
        if isinstance(query, GetTaskQuery):
            try:
                return await client.get_task(
                    types.GetTaskRequest(id=query.task_id), context=self.context
                )
            except Exception as exc:
                error = normalize(exc)
                if (
                    error is not None
                    and error.reason is Reason.TASK_NOT_FOUND
                    and error.source.value != "status_fallback"
                ):
                    return None  # the agent says so: the follow-up's task is not there
                raise
        request = types.ListTasksRequest(
            page_size=query.page_size, include_artifacts=True, page_token=query.page_token
        )
        if query.context_id:
            request.context_id = query.context_id
        if query.status_after is not None:
            request.status_timestamp_after.FromNanoseconds(int(query.status_after * 1e9))
        response = await client.list_tasks(request, context=self.context)
        return TaskPage(tuple(response.tasks), response.next_page_token)
