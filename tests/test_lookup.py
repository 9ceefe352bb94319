"""The sans-IO look-up: find_sent's queries and results, its drivers, and ExactlyOnce."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from a2a_client_errors.lookup import (
    WORK_OPERATIONS,
    ExactlyOnce,
    Found,
    GetTaskQuery,
    ListTasksQuery,
    NotFound,
    Pause,
    Resolution,
    SentMessage,
    TaskPage,
    Unresolved,
    adrive,
    drive,
    find_sent,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable

MID = "msg-0001"


def ids(task: Any) -> Iterable[str]:
    """The messageIds of a test task: ``{"id": ..., "history": [messageId, ...]}``."""
    return list(task["history"])


def made(task_id: str, *message_ids: str) -> dict[str, Any]:
    """A test task whose history holds ``message_ids``."""
    return {"id": task_id, "history": list(message_ids)}


def run(
    sent: SentMessage,
    settings: ExactlyOnce,
    answers: Callable[[GetTaskQuery | ListTasksQuery], Any],
) -> tuple[Any, list[Any]]:
    """Drive ``find_sent`` by hand: the result and every query it yielded, in order."""
    search = find_sent(sent, settings, ids)
    queries: list[Any] = []
    reply: Any = None
    try:
        query = next(search)
        while True:
            queries.append(query)
            reply = None if isinstance(query, Pause) else answers(query)
            query = search.send(reply)
    except StopIteration as stop:
        return stop.value, queries


def pages(*contents: tuple[dict[str, Any], ...]) -> Callable[[Any], TaskPage]:
    """Answers ListTasks with ``contents`` as consecutive pages, by page token."""

    def answer(query: Any) -> TaskPage:
        assert isinstance(query, ListTasksQuery)
        index = int(query.page_token or "0")
        following = str(index + 1) if index + 1 < len(contents) else ""
        return TaskPage(contents[index], following)

    return answer


# --- new tasks: ListTasks -------------------------------------------------------------------


def test_new_task_is_looked_for_by_context_id() -> None:
    """A new message with a contextId is looked for by that context, with no timestamp filter."""
    sent = SentMessage(MID, context_id="ctx-1", sent_at=1_000.0)
    found, queries = run(sent, ExactlyOnce(page_size=50), pages((made("t1", MID),)))
    assert found == Found(made("t1", MID))
    assert queries == [ListTasksQuery("ctx-1", None, "", 50)]


def test_new_task_without_context_is_filtered_by_status_time_less_skew() -> None:
    """Without a contextId the filter is the time of sending less the clock skew."""
    sent = SentMessage(MID, sent_at=1_000.0)
    _, queries = run(sent, ExactlyOnce(clock_skew=30.0), pages((made("t1", MID),)))
    assert queries == [ListTasksQuery(None, 970.0, "", 100)]


def test_no_context_and_no_time_lists_without_a_filter() -> None:
    """Without a contextId nor a time of sending, the list is not filtered."""
    _, queries = run(SentMessage(MID), ExactlyOnce(), pages((made("t1", MID),)))
    assert queries == [ListTasksQuery(None, None, "", 100)]


def test_found_on_the_third_page_follows_the_page_tokens() -> None:
    """Pages are read in turn, each with the previous page's token, until the task is found."""
    answer = pages((made("a", "x"),), (made("b", "y"),), (made("c", "z"), made("d", MID)))
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(), answer)
    assert found == Found(made("d", MID))
    assert [q.page_token for q in queries] == ["", "1", "2"]


def test_found_on_the_first_page_reads_no_more() -> None:
    """The first page holding the messageId ends the search at once."""
    answer = pages((made("a", "x"), made("b", MID)), (made("c", MID),))
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(), answer)
    assert found == Found(made("b", MID))
    assert len(queries) == 1


def test_not_found_pauses_then_looks_again_then_is_not_found() -> None:
    """Nothing found: a pause of recheck_after, a second full look, then NotFound."""
    answer = pages((made("a", "x"),))
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(recheck_after=0.25), answer)
    assert found == NotFound()
    assert queries == [
        ListTasksQuery("ctx-1", None, "", 100),
        Pause(0.25),
        ListTasksQuery("ctx-1", None, "", 100),
    ]


def test_found_on_the_second_look() -> None:
    """A task that lands during the pause is found by the second look."""
    looks: list[int] = []

    def answer(query: Any) -> TaskPage:
        looks.append(1)
        return TaskPage((made("a", MID),) if len(looks) == 2 else ())

    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(), answer)
    assert found == Found(made("a", MID))
    assert [type(q) for q in queries] == [ListTasksQuery, Pause, ListTasksQuery]


def test_recheck_after_zero_looks_once() -> None:
    """recheck_after=0: one look, no pause, then NotFound."""
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(recheck_after=0), pages(()))
    assert found == NotFound()
    assert queries == [ListTasksQuery("ctx-1", None, "", 100)]


def test_empty_pages_are_not_found() -> None:
    """Empty pages (with or without a next token) hold nothing: NotFound after both looks."""
    answer = pages((), ())
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(), answer)
    assert found == NotFound()
    assert [getattr(q, "page_token", None) for q in queries] == ["", "1", None, "", "1"]


def test_more_pages_than_max_pages_is_unresolved() -> None:
    """A context with more pages than max_pages cannot be searched: Unresolved, no second look."""

    def endless(query: Any) -> TaskPage:
        return TaskPage((made("x", "other"),), "more")

    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(max_pages=3), endless)
    assert isinstance(found, Unresolved)
    assert "3 pages" in found.why
    assert len(queries) == 3
    assert not any(isinstance(q, Pause) for q in queries)


def test_exactly_max_pages_is_searched_in_full() -> None:
    """A last page without a token at max_pages is a full search: NotFound, not Unresolved."""
    answer = pages((made("a", "x"),), (made("b", "y"),))
    found, _ = run(SentMessage(MID, "ctx-1"), ExactlyOnce(max_pages=2, recheck_after=0), answer)
    assert found == NotFound()


def test_task_whose_history_lacks_the_id_is_not_it() -> None:
    """A task in the context whose history does not hold the messageId is not the one made."""
    answer = pages((made("a", "msg-0002"), made("b")))
    found, _ = run(SentMessage(MID, "ctx-1"), ExactlyOnce(recheck_after=0), answer)
    assert found == NotFound()


# --- follow-ups: GetTask ----------------------------------------------------------------------


def test_follow_up_is_looked_for_by_get_task() -> None:
    """A follow-up (taskId) reads its task; found when its history holds the messageId."""
    sent = SentMessage(MID, "ctx-1", "task-7")
    found, queries = run(sent, ExactlyOnce(), lambda q: made("task-7", "m0", MID))
    assert found == Found(made("task-7", "m0", MID))
    assert queries == [GetTaskQuery("task-7")]


def test_follow_up_not_in_history_looks_twice_then_not_found() -> None:
    """The task without the messageId: pause, GetTask again, NotFound."""
    sent = SentMessage(MID, task_id="task-7")
    found, queries = run(sent, ExactlyOnce(recheck_after=1.0), lambda q: made("task-7", "m0"))
    assert found == NotFound()
    assert queries == [GetTaskQuery("task-7"), Pause(1.0), GetTaskQuery("task-7")]


def test_follow_up_whose_task_is_missing_is_not_found() -> None:
    """GetTask answered None (the task is not there): NotFound."""
    found, _ = run(SentMessage(MID, task_id="t"), ExactlyOnce(recheck_after=0), lambda q: None)
    assert found == NotFound()


# --- drivers -----------------------------------------------------------------------------------


def test_drive_sends_pauses_to_sleep_and_queries_to_answer() -> None:
    """drive: each Pause goes to sleep, each query to answer, and the result is returned."""
    slept: list[float] = []
    asked: list[Any] = []

    def answer(query: Any) -> TaskPage:
        asked.append(query)
        return TaskPage(())

    search = find_sent(SentMessage(MID, "c"), ExactlyOnce(recheck_after=0.75), ids)
    assert drive(search, answer, slept.append) == NotFound()
    assert slept == [0.75]
    assert len(asked) == 2


def test_drive_lets_an_answer_exception_propagate() -> None:
    """drive: what answer raises ends the search and reaches the caller."""

    def answer(query: Any) -> TaskPage:
        raise ConnectionResetError

    with pytest.raises(ConnectionResetError):
        drive(find_sent(SentMessage(MID, "c"), ExactlyOnce(), ids), answer, lambda s: None)


def test_drive_returns_found() -> None:
    """Driving a search returns Found with the task as the binding gave it."""
    search = find_sent(SentMessage(MID, task_id="t"), ExactlyOnce(), ids)
    assert drive(search, lambda q: made("t", MID), lambda s: None) == Found(made("t", MID))


async def test_adrive_awaits_answers_and_sleeps() -> None:
    """adrive: answers and sleeps are awaited; pauses go to sleep."""
    slept: list[float] = []

    async def answer(query: Any) -> TaskPage:
        await asyncio.sleep(0)
        return TaskPage(())

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    search = find_sent(SentMessage(MID, "c"), ExactlyOnce(recheck_after=0.5), ids)
    assert await adrive(search, answer, sleep) == NotFound()
    assert slept == [0.5]


async def test_adrive_lets_an_answer_exception_propagate() -> None:
    """adrive: what answer raises reaches the caller."""

    async def answer(query: Any) -> TaskPage:
        raise TimeoutError

    async def sleep(seconds: float) -> None:
        return None

    with pytest.raises(TimeoutError):
        await adrive(find_sent(SentMessage(MID, "c"), ExactlyOnce(), ids), answer, sleep)


async def test_adrive_returns_found() -> None:
    """Driving a search async returns Found from a page."""

    async def answer(query: Any) -> TaskPage:
        return TaskPage((made("t", MID),))

    async def sleep(seconds: float) -> None:
        return None

    search: Generator[Any, Any, Any] = find_sent(SentMessage(MID), ExactlyOnce(), ids)
    assert await adrive(search, answer, sleep) == Found(made("t", MID))


# --- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_pages": 0},
        {"page_size": 0},
        {"page_size": 101},
        {"recheck_after": -0.1},
        {"clock_skew": -1.0},
        {"timeout": 0.0},
        {"timeout": -1.0},
        {"reserve": -0.1},
        {"reserve": 1.0},
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()),
)
def test_exactly_once_refuses_bad_settings(kwargs: dict[str, Any]) -> None:
    """Settings outside their ranges raise ValueError."""
    with pytest.raises(ValueError, match=next(iter(kwargs)).split("_")[0]):
        ExactlyOnce(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_pages": 1},
        {"page_size": 1},
        {"page_size": 100},
        {"recheck_after": 0.0},
        {"clock_skew": 0.0},
        {"reserve": 0.0},
        {"reserve": 0.99},
    ],
    ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()),
)
def test_exactly_once_accepts_the_edges(kwargs: dict[str, Any]) -> None:
    """The edges of each range are accepted."""
    settings = ExactlyOnce(**kwargs)
    for name, value in kwargs.items():
        assert getattr(settings, name) == value


def test_exactly_once_defaults() -> None:
    """The defaults: nobody deduplicates, 5 pages of 100, a 0.5 s second look, a 5 min skew."""
    settings = ExactlyOnce()
    assert not settings.deduplicates("https://agent.test:443")
    assert (settings.max_pages, settings.page_size) == (5, 100)
    assert (settings.recheck_after, settings.clock_skew) == (0.5, 300.0)


def test_deduplicates_a_collection_of_peers() -> None:
    """A collection of peer keys: exactly those deduplicate."""
    settings = ExactlyOnce(deduplicating={"https://a.test:443"})
    assert settings.deduplicates("https://a.test:443")
    assert not settings.deduplicates("https://b.test:443")


def test_deduplicates_by_a_function() -> None:
    """A callable is asked about each peer; its answer is taken as a bool."""
    asked: list[str] = []

    def says(peer: str) -> Any:
        asked.append(peer)
        return 1 if peer.startswith("https://ours") else 0

    settings = ExactlyOnce(deduplicating=says)
    assert settings.deduplicates("https://ours.test:443") is True
    assert settings.deduplicates("https://theirs.test:443") is False
    assert asked == ["https://ours.test:443", "https://theirs.test:443"]


def test_work_operations_and_resolutions() -> None:
    """Only SendMessage and SendStreamingMessage create work; resolutions print as their value."""
    assert frozenset({"SendMessage", "SendStreamingMessage"}) == WORK_OPERATIONS
    assert str(Resolution.FOUND) == "found"
    assert {r.value for r in Resolution} == {
        "found",
        "resent",
        "not_found",
        "unresolved",
        "deduplicating",
    }
