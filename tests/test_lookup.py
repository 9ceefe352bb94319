"""The sans-IO look-up: what find_sent proves, follow_task, the retrying reads and drivers."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors._effects import Sleep
from a2a_client_errors._engine import adrive, drive
from a2a_client_errors._lookup import (
    WORK_OPERATIONS,
    AgentFacts,
    Ask,
    Charge,
    ExactlyOnce,
    Failed,
    Found,
    GetTaskQuery,
    ListTasksQuery,
    LookupAllowance,
    MayRead,
    NotFound,
    Pause,
    ReadFailedError,
    Resolution,
    SentMessage,
    TaskPage,
    TaskView,
    Unanswered,
    Unresolved,
    find_sent,
    follow_task,
    parse_timestamp,
    reading,
    within_ttl,
)
from a2a_client_errors.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

MID = "msg-0001"
SETTINGS = ExactlyOnce(history_length=None)


def user(message_id: str) -> tuple[str, bool]:
    """A user message of a test task's history."""
    return (message_id, True)


def agent(message_id: str = "a-1") -> tuple[str, bool]:
    """An agent message of a test task's history."""
    return (message_id, False)


def made(
    task_id: str,
    *history: tuple[str, bool],
    at: float | None = None,
    context: str = "",
    settled: bool = True,
) -> dict[str, Any]:
    """A test task: its view is written out (see `view`)."""
    return {
        "id": task_id,
        "context": context,
        "at": at,
        "history": tuple(history),
        "settled": settled,
    }


def view(task: Any) -> TaskView:
    """The view of a test task."""
    return TaskView(task["id"], task["context"], task["at"], task["history"], task["settled"])


def run(
    sent: SentMessage,
    settings: ExactlyOnce,
    answers: Callable[[GetTaskQuery | ListTasksQuery], Any],
    *,
    messages: bool = False,
    contract: float | None = 0.0,
    since_lost: float = 0.0,
) -> tuple[Any, list[Any]]:
    """Drive ``find_sent`` by hand: the result and every query it yielded, in order.

    By default under a listing contract of 0 s (``contract``), so that one look read to its
    end that shows absence is `NotFound`: what a look proves. None: no contract.
    """
    search = find_sent(
        sent,
        settings,
        view,
        answers_with_messages=messages,
        listed_within=contract,
        since_lost=lambda: since_lost,
    )
    return steps(search, answers)


def steps(search: Generator[Any, Any, Any], answers: Callable[[Any], Any]) -> tuple[Any, list[Any]]:
    """Run a search, answering each query with ``answers`` (every pause taken)."""
    queries: list[Any] = []
    try:
        query = next(search)
        while True:
            queries.append(query)
            query = search.send(True if isinstance(query, Pause) else answers(query))
    except StopIteration as stop:
        return stop.value, queries


def pages(*contents: tuple[dict[str, Any], ...], total: int | None = None) -> Callable[[Any], Any]:
    """Answers ListTasks with ``contents`` as consecutive pages, by page token."""

    def answer(query: Any) -> TaskPage:
        assert isinstance(query, ListTasksQuery)
        index = int(query.page_token or "0")
        following = str(index + 1) if index + 1 < len(contents) else ""
        return TaskPage(contents[index], following, total, 100)

    return answer


def last_look(result: Any) -> str:
    """What the search's last look said: an `Unresolved`'s why, less the look-up's summary."""
    assert isinstance(result, Unresolved)
    return result.why.rsplit("; the last look: ", 1)[-1]


# --- new tasks: the listing ----------------------------------------------------------------


def test_new_task_is_looked_for_in_its_context_without_artifacts_or_time_filter() -> None:
    """A new message with a contextId lists that context: first one task, history bound."""
    sent = SentMessage(MID, context_id="ctx-1", sent_at=1_000.0)
    found, queries = run(sent, ExactlyOnce(page_size=20), pages((made("t1", user(MID)),)))
    assert found == Found(made("t1", user(MID)))
    assert queries == [ListTasksQuery("ctx-1", "", 1, 20, 64 * 1024)]


def test_no_context_lists_every_task() -> None:
    """Without a contextId, the whole listing is searched (no timestamp filter drops any)."""
    _, queries = run(SentMessage(MID, sent_at=5.0), SETTINGS, pages((made("t1", user(MID)),)))
    assert queries == [ListTasksQuery(None, "", 1, None, 64 * 1024)]


def test_pages_grow_to_what_the_bytes_left_hold() -> None:
    """After a first page of one task, each page asks as many as half the bytes left hold."""
    answer = pages((made("a", user("x")),), (made("b", user("y")),), (made("c", user(MID)),))
    settings = ExactlyOnce(history_length=None, max_bytes=2_000, page_size=50)
    found, queries = run(SentMessage(MID), settings, answer)
    assert found == Found(made("c", user(MID)))
    # 100 bytes a task (the test pages' size): (2000 - 100) // 200, then (2000 - 200) // 200
    assert [(q.page_size, q.max_bytes) for q in queries] == [(1, 2000), (9, 1900), (9, 1800)]


def test_a_busy_agents_look_stops_before_its_bytes_and_the_next_goes_on() -> None:
    """50 KB tasks: one a look within 64 KiB; the next look starts where the last stopped."""

    def answer(query: Any) -> TaskPage:
        if not query.page_token:
            return TaskPage((made("a", user("x")),), "1", None, 50_000)
        return TaskPage((made("b", user(MID)),), "", None, 50_000)

    found, queries = run(SentMessage(MID), ExactlyOnce(), answer, contract=None)
    assert found == Found(made("b", user(MID)))
    lists = [q for q in queries if isinstance(q, ListTasksQuery)]
    assert [(q.page_token, q.page_size, q.max_bytes) for q in lists] == [
        ("", 1, 64 * 1024),
        ("1", 1, 64 * 1024),
    ]


def test_a_busy_agents_task_on_the_first_page_costs_one_task() -> None:
    """Found first, with no room left for its neighbours: found, nothing more read."""
    big = TaskPage((made("a", user(MID)),), "1", None, 50_000)
    found, queries = run(SentMessage(MID), ExactlyOnce(), lambda q: big)
    assert found == Found(made("a", user(MID)))
    assert len(queries) == 1


def test_a_look_resumed_to_the_end_proves_nothing_and_the_next_starts_at_the_top() -> None:
    """Resumed from a token and read to the end: no proof; the next look reads from the top."""

    def answer(query: Any) -> TaskPage:
        if not query.page_token:
            return TaskPage((made("a", user("x")),), "1", None, 50_000)
        return TaskPage((made("b", user("y")),), "", None, 50_000)

    found, queries = run(SentMessage(MID), ExactlyOnce(max_looks=3), answer)
    assert isinstance(found, Unresolved)  # under a contract too: never NOT_FOUND
    lists = [q.page_token for q in queries if isinstance(q, ListTasksQuery)]
    assert lists == ["", "1", ""]


def test_found_on_the_third_page_follows_the_page_tokens() -> None:
    """Pages are read in turn, each with the previous page's token, until the task is found."""
    answer = pages(
        (made("a", user("x")),),
        (made("b", user("y")),),
        (made("c", user("z")), made("d", user(MID))),
    )
    found, queries = run(SentMessage(MID, "ctx-1"), SETTINGS, answer)
    assert found == Found(made("d", user(MID)))
    assert [q.page_token for q in queries] == ["", "1", "2"]


def test_found_on_a_page_reads_one_more_page_then_stops() -> None:
    """The page holding the task the message started, and its neighbours' page, end it."""
    answer = pages(
        (made("a", user("x")), made("b", user(MID))),
        (made("c", user("y")),),
        (made("d", user("z")),),
    )
    found, queries = run(SentMessage(MID, "ctx-1"), SETTINGS, answer)
    assert found == Found(made("b", user(MID)))
    assert len(queries) == 2


def test_a_task_listed_twice_by_an_unstable_listing_is_one_task() -> None:
    """A listing that repeats a task on the next page (offset tokens): still one task, found."""
    task = made("a", user(MID))
    found, _ = run(SentMessage(MID), SETTINGS, pages((task,), (task, made("b", user("y")))))
    assert found == Found(task)


def test_a_second_task_started_by_it_on_the_next_page_is_no_answer() -> None:
    """Its neighbours' page holds another task started by the messageId: no answer."""
    answer = pages((made("a", user(MID)),), (made("b", user(MID)),))
    found, queries = run(SentMessage(MID), SETTINGS, answer, contract=None)
    assert found == Unresolved("more than one task was started by this messageId")
    assert len(queries) == 2  # and no second look: it will not become one task


def test_a_task_without_a_status_timestamp_is_a_candidate() -> None:
    """A task with no status timestamp (optional in A2A) is found like any other."""
    found, _ = run(
        SentMessage(MID, sent_at=1_000.0), SETTINGS, pages((made("t", user(MID), at=None),))
    )
    assert found == Found(made("t", user(MID)))


def test_the_task_the_message_started_is_found_whatever_its_timestamp() -> None:
    """A match is the task even with a status timestamp before the window (clocks differ)."""
    task = made("t", user(MID), at=1.0)
    found, _ = run(SentMessage(MID, sent_at=1_000.0), SETTINGS, pages((task,)))
    assert found == Found(task)


def test_tasks_started_by_other_messages_show_absence_under_a_contract() -> None:
    """Every candidate shows its start and none is the message's: absent, in one look."""
    answer = pages(
        (made("a", user("x"), agent()), made("b", user("y"))),
    )
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(recheck_after=0.25), answer)
    assert found == NotFound()
    assert queries == [ListTasksQuery("ctx-1", "", 1, 20, 64 * 1024)]


def test_absence_without_a_contract_is_never_concluded() -> None:
    """Without the agent's word, absence only means: look again, pauses doubling to poll_max."""
    answer = pages((made("a", user("x")),))
    settings = ExactlyOnce(recheck_after=1.0, poll_max=4.0, max_looks=5)
    found, queries = run(SentMessage(MID, "ctx-1"), settings, answer, contract=None)
    assert isinstance(found, Unresolved)
    assert "not found in 5 looks" in found.why
    assert [q.seconds for q in queries if isinstance(q, Pause)] == [1.0, 2.0, 4.0, 4.0]


def test_absence_counts_only_once_the_contract_time_passed() -> None:
    """Under a 10 s contract, a look 3 s after the loss is no proof: it looks again at 10 s."""
    answer = pages((made("a", user("x")),))
    settings = ExactlyOnce(recheck_after=30.0, max_looks=3)
    found, queries = run(SentMessage(MID), settings, answer, contract=10.0, since_lost=3.0)
    assert isinstance(found, Unresolved)  # since_lost stays 3 s here: never proven
    assert [q.seconds for q in queries if isinstance(q, Pause)] == [7.0, 5.0]


def test_a_pause_refused_by_the_deadline_ends_the_search() -> None:
    """The reader says a pause does not fit: the search ends unresolved, saying so."""
    search = find_sent(SentMessage(MID), SETTINGS, view)
    assert isinstance(next(search), ListTasksQuery)
    assert isinstance(search.send(TaskPage((made("a", user("x")),))), Pause)
    with pytest.raises(StopIteration) as stop:
        search.send(False)
    assert "the deadline came" in stop.value.value.why


def test_recheck_after_zero_looks_once() -> None:
    """recheck_after=0: one look, no pause."""
    found, queries = run(
        SentMessage(MID, "ctx-1"), ExactlyOnce(recheck_after=0), pages((made("a", user("x")),))
    )
    assert found == NotFound()
    assert len(queries) == 1


def test_found_on_the_second_look() -> None:
    """A task that lands during the pause is found by the second look."""
    looks: list[int] = []

    def answer(query: Any) -> TaskPage:
        looks.append(1)
        tasks = (made("a", user(MID)),) if len(looks) == 2 else (made("b", user("x")),)
        return TaskPage(tasks)

    found, queries = run(SentMessage(MID, "ctx-1"), SETTINGS, answer, contract=None)
    assert found == Found(made("a", user(MID)))
    assert [type(q) for q in queries] == [ListTasksQuery, Pause, ListTasksQuery]


def test_an_inconclusive_first_look_is_found_by_the_second() -> None:
    """A blind first look does not stop the second from finding the task."""
    looks: list[int] = []

    def answer(query: Any) -> TaskPage:
        looks.append(1)
        return TaskPage((made("a", user(MID)),) if len(looks) == 2 else (made("b"),))

    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, answer)
    assert found == Found(made("a", user(MID)))


@pytest.mark.parametrize(
    "history",
    [(), (agent(),), (agent(), agent("a-2"))],
    ids=["no history", "agent only", "trimmed to the agent's"],
)
def test_a_candidate_that_does_not_show_its_start_leaves_it_unresolved(
    history: tuple[tuple[str, bool], ...],
) -> None:
    """No history, or history without the user's message first: nothing can be proven."""
    answer = pages(
        (made("a", user("x")), made("b", *history)),
    )
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, answer)
    assert isinstance(found, Unresolved)
    assert "do not show how they started" in found.why


def test_a_blind_task_older_than_the_window_is_not_a_candidate() -> None:
    """A task whose status changed before the message was sent (less the skew) cannot be it."""
    sent = SentMessage(MID, sent_at=1_000.0)
    answer = pages((made("a", user("x"), at=999.0), made("b", at=600.0)))
    found, _ = run(sent, ExactlyOnce(clock_skew=300.0), answer)
    assert found == NotFound()


def test_a_blind_task_just_inside_the_skew_is_a_candidate() -> None:
    """The window starts at the time of sending less the clock skew."""
    sent = SentMessage(MID, sent_at=1_000.0)
    found, _ = run(
        sent, ExactlyOnce(clock_skew=300.0), pages((made("a", user("x")), made("b", at=700.0)))
    )
    assert isinstance(found, Unresolved)


def test_a_sub_task_holding_the_message_id_is_not_taken_for_the_task() -> None:
    """The task the message started is the one, not a more recent sub-task echoing it."""
    sub = made("sub", agent(), user(MID))
    parent = made("parent", user(MID), agent())
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, pages((sub, parent)))
    assert found == Found(parent)


def test_two_tasks_started_by_the_message_id_are_unresolved() -> None:
    """Two tasks whose first message is the message's: which one cannot be told."""
    answer = pages(
        (made("a", user(MID)), made("b", user(MID))),
    )
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, answer)
    assert last_look(found) == ("more than one task was started by this messageId")


def test_a_task_holding_the_id_without_having_started_is_unresolved() -> None:
    """The messageId only echoed in a task it did not start: no proof either way."""
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, pages((made("s", agent(), user(MID)),)))
    assert isinstance(found, Unresolved)
    assert "without having been started by it" in found.why


def test_a_listing_that_ignores_its_context_filter_is_unresolved() -> None:
    """A task of another context in a listing asked for one context: the listing is a stub."""
    answer = pages((made("a", user("x"), context="ctx-other"),))
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, answer)
    assert last_look(found) == ("the listing does not keep to the contextId it was asked for")


def test_more_pages_than_max_pages_is_unresolved() -> None:
    """A listing that goes on past max_pages is inconclusive."""
    answer = pages(*[(made(f"t{i}", user("x")),) for i in range(4)])
    found, queries = run(
        SentMessage(MID, "ctx-1"), ExactlyOnce(max_pages=3, recheck_after=0, max_looks=1), answer
    )
    assert last_look(found) == ("more than 3 pages of tasks to search")
    assert len(queries) == 3


def test_exactly_max_pages_is_searched_in_full() -> None:
    """max_pages pages, the last without a token: the listing was read to its end."""
    answer = pages(*[(made(f"t{i}", user("x")),) for i in range(3)])
    found, _ = run(SentMessage(MID, "ctx-1"), ExactlyOnce(max_pages=3), answer)
    assert found == NotFound()


def test_a_listing_larger_than_max_bytes_is_unresolved() -> None:
    """Pages that add up past max_bytes end the look (100 bytes a page here)."""
    answer = pages(*[(made(f"t{i}", user("x")),) for i in range(20)])
    found, queries = run(
        SentMessage(MID, "ctx-1"), ExactlyOnce(max_bytes=1024, max_pages=50, max_looks=2), answer
    )
    assert last_look(found) == ("the listing is larger than 1024 bytes")
    # each look: one task, then pages half the bytes left hold (100 bytes a page here)
    assert [q.page_size for q in queries if isinstance(q, ListTasksQuery)][:6] == [1, 4, 4, 3, 3, 2]
    assert all(q.max_bytes > 0 for q in queries if isinstance(q, ListTasksQuery))


def test_a_listing_that_ends_before_its_count_is_unresolved() -> None:
    """A last page whose listing says it holds more tasks than were read stopped early."""
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, pages((made("a", user("x")),), total=7))
    assert last_look(found) == ("the listing ended before the tasks it counts")


def test_an_empty_context_is_not_there_when_the_agent_lists_tasks() -> None:
    """An empty listing of a (new) context: one task anywhere shows the listing works."""
    asked: list[ListTasksQuery] = []

    def answer(query: Any) -> TaskPage:
        asked.append(query)
        return TaskPage(() if query.context_id else (made("other", user("x")),))

    found, _ = run(SentMessage(MID, "ctx-1"), ExactlyOnce(recheck_after=0), answer)
    assert found == NotFound()
    assert asked == [
        ListTasksQuery("ctx-1", "", 1, 20, 64 * 1024),
        ListTasksQuery(None, "", 1, 1, 64 * 1024),
    ]


@pytest.mark.parametrize("context", ["ctx-1", None])
def test_an_agent_that_lists_nothing_proves_nothing(context: str | None) -> None:
    """A listing empty everywhere (a stub, or no task visible to this caller) is unresolved."""
    found, _ = run(SentMessage(MID, context), SETTINGS, lambda query: TaskPage(()))
    assert last_look(found) == ("the agent lists no task at all (an empty listing proves nothing)")


def test_an_agent_that_answers_with_messages_proves_nothing() -> None:
    """A Message answer leaves no task: nothing found is then no proof."""
    found, _ = run(
        SentMessage(MID, "ctx-1"), SETTINGS, pages((made("a", user("x")),)), messages=True
    )
    assert isinstance(found, Unresolved)
    assert "answers messages with a Message" in found.why


def test_an_agent_that_answers_with_messages_is_still_searched() -> None:
    """A task the message did start is found there too."""
    found, _ = run(
        SentMessage(MID, "ctx-1"), SETTINGS, pages((made("a", user(MID)),)), messages=True
    )
    assert found == Found(made("a", user(MID)))


def test_the_one_task_of_the_messages_own_context_is_found_without_history() -> None:
    """A context named after the message holds only its task: found, history or not."""
    task = made("t", context=MID)  # an agent that keeps no history (a2a-java 1.2)
    found, queries = run(SentMessage(MID, MID), SETTINGS, pages((task,)), contract=None)
    assert found == Found(task)
    assert queries[0] == ListTasksQuery(MID, "", 1, None, 64 * 1024)


def test_a_rewritten_history_in_the_own_context_is_still_the_task() -> None:
    """The agent stored the user's message under its own id: in the own context, still it."""
    task = made("t", user("agent-made-id"), agent(), context=MID)
    found, _ = run(SentMessage(MID, MID), SETTINGS, pages((task,)), contract=None)
    assert found == Found(task)


def test_two_tasks_in_the_own_context_leave_it_unresolved() -> None:
    """Two tasks where only the message's can be: which is it? Nothing found, looked once."""
    tasks = (made("a", context=MID), made("b", context=MID))
    found, queries = run(SentMessage(MID, MID), SETTINGS, pages(tasks), contract=None)
    assert found == Unresolved("2 tasks in the message's own context")
    assert sum(isinstance(q, ListTasksQuery) for q in queries) == 1


def test_an_own_context_left_empty_is_looked_at_again() -> None:
    """No task in the own context yet: the agent may record it later; looked again."""
    looks: list[int] = []

    def answer(query: Any) -> TaskPage:
        looks.append(1)
        return TaskPage((made("t", context=MID),) if len(looks) > 2 else ())

    found, _ = run(SentMessage(MID, MID), SETTINGS, answer, contract=None)
    assert found == Found(made("t", context=MID))


def test_a_context_that_is_not_the_messages_id_is_not_its_own() -> None:
    """Another contextId may hold older tasks: one task there without history is not taken."""
    task = made("t", context="ctx-1")
    found, _ = run(
        SentMessage(MID, "ctx-1"), ExactlyOnce(max_looks=1), pages((task,)), contract=None
    )
    assert isinstance(found, Unresolved)


def test_a_task_outside_the_filter_started_by_the_message_is_still_found() -> None:
    """A listing that ignores its filter: the task the message started is found anyway."""
    task = made("t", user(MID), context="other")
    found, _ = run(SentMessage(MID, "ctx-1"), SETTINGS, pages((task,)))
    assert found == Found(task)


# --- follow-ups: GetTask ---------------------------------------------------------------------


def test_follow_up_is_looked_for_in_its_task() -> None:
    """A message naming a taskId is looked for by GetTask of that task, in its history."""
    task = made("task-9", user("first"), agent(), user(MID))
    found, queries = run(SentMessage(MID, task_id="task-9"), SETTINGS, lambda q: task)
    assert found == Found(task)
    assert queries == [GetTaskQuery("task-9")]


def test_follow_up_absent_from_a_whole_history_is_absent_under_a_contract() -> None:
    """A history that starts with the user's message and lacks the follow-up shows absence."""
    task = made("task-9", user("first"), agent())
    found, queries = run(SentMessage(MID, task_id="task-9"), SETTINGS, lambda q: task)
    assert found == NotFound()
    assert queries == [GetTaskQuery("task-9")]


def test_a_follow_up_that_lands_late_is_found_by_a_later_look() -> None:
    """Without a contract the follow-up's task is read again until its message shows."""
    reads: list[int] = []

    def answer(query: Any) -> Any:
        reads.append(1)
        if len(reads) < 3:
            return made("task-9", user("first"), agent())
        return made("task-9", user("first"), agent(), user(MID))

    found, queries = run(SentMessage(MID, task_id="task-9"), SETTINGS, answer, contract=None)
    assert isinstance(found, Found)
    assert [type(q) for q in queries].count(GetTaskQuery) == 3


def test_follow_up_held_only_by_an_agent_message_is_not_it() -> None:
    """The messageId on an agent's message is not the user's follow-up."""
    task = made("task-9", user("first"), agent(MID))
    found, _ = run(SentMessage(MID, task_id="task-9"), SETTINGS, lambda q: task)
    assert found == NotFound()


def test_follow_up_in_a_trimmed_history_is_unresolved() -> None:
    """A history that does not reach back to the task's start cannot prove absence."""
    task = made("task-9", agent())
    found, _ = run(SentMessage(MID, task_id="task-9"), SETTINGS, lambda q: task)
    assert last_look(found) == (
        "the task's history does not go back to its start (trimmed or absent)"
    )


def test_follow_up_whose_task_is_answered_by_another_task_is_unresolved() -> None:
    """A GetTask answered with another task (holding the messageId or not) proves nothing."""
    other = made("task-1", user("first"), agent(), user(MID))
    found, queries = run(SentMessage(MID, task_id="task-9"), SETTINGS, lambda q: other)
    assert last_look(found) == "GetTask answered another task than the one asked for"
    assert GetTaskQuery("task-9") in queries


def test_follow_up_whose_task_the_agent_does_not_know_is_not_there() -> None:
    """The agent says the task is not there: nothing was added to it."""
    found, _ = run(SentMessage(MID, task_id="gone"), SETTINGS, lambda q: None)
    assert found == NotFound()


# --- follow_task ------------------------------------------------------------------------------


def test_follow_task_returns_a_settled_task_without_reading() -> None:
    """A task already terminal or interrupted is waited for no longer."""
    task = made("t", settled=True)
    result, queries = steps(follow_task(task, SETTINGS, view), lambda q: None)
    assert result is task
    assert queries == []


def test_follow_task_reads_with_doubling_pauses_until_settled() -> None:
    """GetTask after pauses from poll_initial, doubling up to poll_max, until it settles."""
    reads = iter([made("t", settled=False)] * 3 + [made("t", settled=True)])
    settings = ExactlyOnce(poll_initial=0.5, poll_max=1.5)
    result, queries = steps(
        follow_task(made("t", settled=False), settings, view), lambda q: next(reads)
    )
    assert result == made("t", settled=True)
    assert queries == [
        Pause(0.5), GetTaskQuery("t"), Pause(1.0), GetTaskQuery("t"),
        Pause(1.5), GetTaskQuery("t"), Pause(1.5), GetTaskQuery("t"),
    ]  # fmt: skip


def test_follow_task_ends_with_the_last_task_when_the_agent_forgets_it() -> None:
    """A task the agent no longer knows ends the wait with the last one read."""
    first = made("t", settled=False)
    result, _ = steps(follow_task(first, SETTINGS, view), lambda q: None)
    assert result is first


def test_follow_task_keeps_the_listed_task_when_its_reread_answers_another() -> None:
    """A reread that answers another task (a confused agent, a caching hop) is not taken."""
    listed = made("t", user(MID), settled=True)
    result, queries = steps(
        follow_task(listed, SETTINGS, view, reread=True), lambda q: made("t-999", user("x"))
    )
    assert result is listed
    assert queries == [GetTaskQuery("t")]


def test_follow_task_ends_with_its_own_task_when_a_read_answers_another() -> None:
    """A wait's read that answers another task ends the wait with the task's last own read."""
    reads = iter([made("t", settled=False), made("t-999", settled=True)])
    first = made("t", settled=False)
    result, queries = steps(follow_task(first, SETTINGS, view), lambda q: next(reads))
    assert result == made("t", settled=False)
    assert [q for q in queries if isinstance(q, GetTaskQuery)] == [GetTaskQuery("t")] * 2


# --- reads that retry ------------------------------------------------------------------------


def effects_of(
    search: Generator[Any, Any, Any],
    replies: Callable[[Any], Any],
    *,
    judge: Callable[[Any, Exception, int], float | Unanswered] = lambda q, e, n: 0.25,
    clock: FakeClock | None = None,
    deadline_at: float | None = None,
    rationed: bool = True,
    patient: ExactlyOnce | None = None,
) -> tuple[Any, list[Any]]:
    """Run `reading` by hand: each effect answered by ``replies``; the result and the effects.

    ``MayRead`` is answered True and ``Charge`` None unless ``replies`` says otherwise.
    """
    clock = clock or FakeClock()
    gen = reading(
        search, judge, clock=clock, deadline_at=deadline_at, rationed=rationed, patient=patient
    )
    seen: list[Any] = []
    try:
        effect = next(gen)
        while True:
            seen.append(effect)
            if isinstance(effect, Sleep):
                clock.advance(effect.seconds)
            effect = gen.send(replies(effect))
    except StopIteration as stop:
        return stop.value, seen


def one_get() -> Generator[Any, Any, Any]:
    """A search of one GetTask, returning its answer."""
    answer = yield GetTaskQuery("t")
    return answer


def answers(*replies: Any) -> Callable[[Any], Any]:
    """Answer each Ask with the next reply; MayRead with True, Charge and Sleep with None."""
    queue = iter(replies)

    def reply(effect: Any) -> Any:
        if isinstance(effect, MayRead):
            return True
        if isinstance(effect, (Charge, Sleep)):
            return None
        return next(queue)

    return reply


def test_reading_asks_each_query_with_the_time_left() -> None:
    """Each query is an Ask bounded by the time left, made while the allowance is open."""
    result, seen = effects_of(one_get(), answers("task"), deadline_at=10.0)
    assert result == "task"
    assert seen == [MayRead(), Ask(GetTaskQuery("t"), 10.0)]


def test_reading_retries_a_failed_read_after_its_pause() -> None:
    """A failure the judge retries: the judge's pause, then the same query again."""
    result, seen = effects_of(one_get(), answers(Failed(OSError("reset")), "task"))
    assert result == "task"
    assert seen == [
        MayRead(),
        Ask(GetTaskQuery("t"), None),
        Charge(),
        Sleep(0.25),
        MayRead(),
        Ask(GetTaskQuery("t"), None),
    ]


def test_only_an_unanswered_read_is_charged() -> None:
    """A transport failure is charged; an answer of another shape or too large is not."""
    _, seen = effects_of(one_get(), answers(Failed(OSError()), "task"))
    assert seen.count(Charge()) == 1
    answered = Failed(ReadFailedError("not a task"))
    _, seen = effects_of(one_get(), answers(answered, "task"))
    assert Charge() not in seen


def test_the_allowance_rations_only_reads_left_unanswered() -> None:
    """Open while a read is left; charges may take it below zero; deposits bring it back."""
    allowance = LookupAllowance(2.0, 0.5)
    assert allowance.open()
    for _ in range(5):
        allowance.charge()
    assert allowance.reads == -2.0  # never below -capacity
    assert not allowance.open()
    for _ in range(6):
        allowance.deposit()
    assert allowance.open()
    for _ in range(10):
        allowance.deposit()
    assert allowance.reads == 2.0


def test_reading_tells_the_judge_how_often_a_query_was_asked() -> None:
    """The judge sees the query, the exception and the count of asks; its word ends it."""
    calls: list[tuple[Any, str, int]] = []
    failure = OSError("reset")

    def judge(query: Any, exc: Exception, asked: int) -> float | Unanswered:
        calls.append((query, str(exc), asked))
        return 0.1 if asked < 2 else Unanswered("given up")

    result, _ = effects_of(one_get(), answers(Failed(failure), Failed(failure)), judge=judge)
    assert result == Unanswered("given up")
    assert calls == [(GetTaskQuery("t"), "reset", 1), (GetTaskQuery("t"), "reset", 2)]


def test_reading_sends_unanswered_when_the_allowance_is_spent() -> None:
    """No read left in the allowance: nothing is asked, and the search is told why, finally."""

    def reply(effect: Any) -> Any:
        return False if isinstance(effect, MayRead) else None

    result, seen = effects_of(one_get(), reply)
    assert isinstance(result, Unanswered)
    assert result.final
    assert "allowance is spent" in result.why
    assert seen == [MayRead()]


def test_an_unrationed_read_draws_on_no_allowance() -> None:
    """A wait's reads (rationed=False) ask the allowance nothing and charge nothing."""
    result, seen = effects_of(one_get(), answers("task"), rationed=False)
    assert result == "task"
    assert seen == [Ask(GetTaskQuery("t"), None)]


def test_a_pause_past_the_deadline_is_refused_to_the_search() -> None:
    """A pause the deadline would cut is not taken: the search is told False."""
    told: list[Any] = []

    def search() -> Generator[Any, Any, Any]:
        told.append((yield Pause(5.0)))
        return "ended"

    result, seen = effects_of(search(), lambda e: None, deadline_at=3.0)
    assert result == "ended"
    assert told == [False]
    assert seen == []


def test_a_pause_that_fits_is_taken_and_told() -> None:
    """A pause before the deadline is taken; the search is told True."""
    told: list[Any] = []

    def search() -> Generator[Any, Any, Any]:
        told.append((yield Pause(1.0)))
        return "ended"

    _, seen = effects_of(search(), lambda e: None, deadline_at=3.0)
    assert told == [True]
    assert seen == [Sleep(1.0)]


def test_reading_does_not_retry_past_the_deadline() -> None:
    """A retry whose pause would cross the deadline is not made."""
    result, _ = effects_of(
        one_get(), answers(Failed(OSError())), judge=lambda q, e, n: 5.0, deadline_at=3.0
    )
    assert result == Unanswered("the deadline came before the read was retried")


def test_reading_asks_nothing_once_the_deadline_passed() -> None:
    """No time left: nothing is asked."""
    clock = FakeClock(start=20.0)
    result, seen = effects_of(one_get(), answers("task"), clock=clock, deadline_at=10.0)
    assert result == Unanswered("the deadline came before the read was answered")
    assert seen == []


def test_a_patient_read_is_retried_past_its_attempts_with_growing_pauses() -> None:
    """A wait's read: retried whatever its count, pauses doubling from poll_initial to max."""
    settings = ExactlyOnce(poll_initial=1.0, poll_max=4.0)
    failed = Failed(OSError("reset"))
    result, seen = effects_of(
        one_get(),
        answers(failed, failed, failed, failed, "task"),
        judge=lambda q, e, n: 0.0 if n == 1 else Unanswered("the judge counts"),
        rationed=False,
        patient=settings,
        deadline_at=100.0,
    )
    assert result == "task"
    assert [e.seconds for e in seen if isinstance(e, Sleep)] == [1.0, 2.0, 4.0, 4.0]


def test_a_patient_read_honours_a_longer_pause_the_agent_asks() -> None:
    """A Retry-After longer than the backoff is waited for."""
    result, seen = effects_of(
        one_get(),
        answers(Failed(OSError()), "task"),
        judge=lambda q, e, n: 3.0,
        rationed=False,
        patient=ExactlyOnce(poll_initial=0.5),
    )
    assert result == "task"
    assert [e.seconds for e in seen if isinstance(e, Sleep)] == [3.0]


def test_a_refused_patient_read_ends_at_once() -> None:
    """What the judge will not retry (a refusal) ends a wait's read at once."""
    refused = Unanswered("refused", final=True)
    result, _ = effects_of(
        one_get(),
        answers(Failed(OSError())),
        judge=lambda q, e, n: refused,
        rationed=False,
        patient=ExactlyOnce(),
    )
    assert result is refused


# --- the engine's drivers carry the reads out ----------------------------------------------------


class Reader:
    """What the engine's drivers use of a Guard to carry reads out: its sleeps, an allowance."""

    def __init__(self, ledger: list[str], *, open_: bool = True) -> None:
        self.ledger = ledger
        self.open_ = open_
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        """Note the pause."""
        self.slept.append(seconds)

    async def asleep(self, seconds: float) -> None:
        """Note the pause."""
        self.slept.append(seconds)

    def allowance_for(self, peer: str) -> Any:
        """An allowance that notes each question and each charge, for ``peer``."""
        ledger = self.ledger

        class Allowance:
            def open(self) -> bool:
                ledger.append(f"may {peer}")
                return True

            def charge(self) -> None:
                ledger.append(f"charge {peer}")

        return Allowance()


def test_drive_carries_out_each_read_effect() -> None:
    """Ask calls ask(query, timeout), Sleep sleeps, MayRead asks, Charge charges the peer's."""
    asked: list[tuple[Any, float | None]] = []
    ledger: list[str] = []
    outcomes = iter([OSError("reset"), "task"])

    def ask(query: Any, timeout: float | None) -> Any:
        asked.append((query, timeout))
        answer = next(outcomes)
        if isinstance(answer, Exception):
            raise answer
        return answer

    guard = Reader(ledger)
    effects = reading(one_get(), lambda q, e, n: 0.5, clock=FakeClock(), deadline_at=None, ask=ask)
    assert drive(effects, guard, "peer") == "task"  # type: ignore[arg-type]
    assert guard.slept == [0.5]
    assert asked == [(GetTaskQuery("t"), None)] * 2
    assert ledger == ["may peer", "charge peer", "may peer"]


async def test_adrive_awaits_asks_and_sleeps() -> None:
    """The async driver awaits what returns awaitables, and sends failures back."""
    outcomes = iter([OSError("reset"), "task"])

    async def ask(query: Any, timeout: float | None) -> Any:
        answer = next(outcomes)
        if isinstance(answer, Exception):
            raise answer
        return answer

    guard = Reader([])
    effects = reading(one_get(), lambda q, e, n: 0.5, clock=FakeClock(), deadline_at=None, ask=ask)
    assert await adrive(effects, guard, "peer") == "task"  # type: ignore[arg-type]
    assert guard.slept == [0.5]


async def test_adrive_lets_a_failing_sleep_propagate() -> None:
    """Only a failed ask is judged: a sleep that raises (a cancellation, a bug) propagates."""

    class Cancelled(Reader):
        async def asleep(self, seconds: float) -> None:
            raise asyncio.CancelledError

    def ask(query: Any, timeout: float | None) -> Any:
        raise OSError

    effects = reading(one_get(), lambda q, e, n: 0.5, clock=FakeClock(), deadline_at=None, ask=ask)
    with pytest.raises(asyncio.CancelledError):
        await adrive(effects, Cancelled([]), "peer")  # type: ignore[arg-type]


# --- settings, views, timestamps --------------------------------------------------------------


def test_exactly_once_defaults() -> None:
    """Ten pages of up to 50 tasks, 20 history entries, 64 KiB a look, 16 looks, no contract."""
    settings = ExactlyOnce()
    assert (settings.max_pages, settings.page_size, settings.history_length) == (10, 50, 20)
    assert settings.max_bytes == 64 * 1024
    assert (settings.recheck_after, settings.clock_skew, settings.timeout) == (0.5, 300.0, 30.0)
    assert (settings.reserve, settings.non_blocking) == (0.2, None)
    assert (settings.poll_initial, settings.poll_max, settings.max_looks) == (0.5, 5.0, 16)
    assert (settings.allowance, settings.allowance_per_call) == (10.0, 0.1)
    assert settings.deduplicating == ()
    assert settings.listed_within is None
    assert settings.listing_contract("any") is None


def test_listing_contracts_by_name_or_rule() -> None:
    """A contract per peer key, by mapping or function; nonsense declares nothing."""
    by_name = ExactlyOnce(listed_within={"a": 5})
    assert (by_name.listing_contract("a"), by_name.listing_contract("b")) == (5.0, None)
    by_rule = ExactlyOnce(listed_within=lambda peer: 2.0 if peer.endswith(":443") else None)
    assert by_rule.listing_contract("https://x:443") == 2.0
    assert by_rule.listing_contract("http://x:80") is None
    nonsense = ExactlyOnce(listed_within={"a": float("nan"), "b": -1.0})
    assert (nonsense.listing_contract("a"), nonsense.listing_contract("b")) == (None, None)


def test_a_resend_must_fall_inside_the_ttl_less_its_margin() -> None:
    """Inside the ttl less max(1 s, 10 %): covered; at or past it: not."""
    assert within_ttl(8.9, 10.0)
    assert not within_ttl(9.0, 10.0)
    assert within_ttl(89.0, 100.0)
    assert not within_ttl(90.0, 100.0)
    facts = AgentFacts(deduplicates=True, dedupe_ttl=10.0)
    assert not facts.dedupe_covers(1.0)  # not confirmed by the agent's answers
    facts.dedupe_confirmed = True
    assert facts.dedupe_covers(1.0)
    assert not facts.dedupe_covers(9.5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_pages": 0},
        {"page_size": 0},
        {"page_size": 101},
        {"history_length": 0},
        {"max_bytes": 10},
        {"recheck_after": -1.0},
        {"clock_skew": -1.0},
        {"timeout": 0.0},
        {"reserve": 1.0},
        {"poll_initial": 0.0},
        {"poll_initial": 6.0},
        {"max_looks": 0},
        {"allowance": 0.5},
        {"allowance_per_call": 2.0},
    ],
)
def test_exactly_once_refuses_nonsense(kwargs: dict[str, Any]) -> None:
    """Settings outside their ranges are refused at once."""
    with pytest.raises(ValueError, match="must"):
        ExactlyOnce(**kwargs)


def test_attempt_time_keeps_the_reserve_unless_too_little_is_left() -> None:
    """An attempt gets the time left less the reserve, or all of it when little is left."""
    settings = ExactlyOnce(reserve=0.2)
    assert settings.attempt_time(10.0, 10.0) == pytest.approx(8.0)
    assert settings.attempt_time(3.0, 10.0) == 3.0
    assert settings.attempt_time(5.0, None) == 5.0
    assert settings.attempt_time(-1.0, 10.0) == 0.0


def test_deduplicating_by_name_or_rule() -> None:
    """Peers declared to deduplicate, by a collection of keys or a function of the key."""
    assert ExactlyOnce(deduplicating={"a"}).deduplicates("a")
    assert not ExactlyOnce(deduplicating={"a"}).deduplicates("b")
    assert ExactlyOnce(deduplicating=lambda peer: peer.endswith(".x")).deduplicates("p.x")


def test_task_view_predicates() -> None:
    """shows_start, started_by, holds and holds_users read the history as given."""
    view_ = TaskView("t", history=(user(MID), agent("b"), user("c")))
    assert view_.shows_start
    assert view_.started_by(MID)
    assert not view_.started_by("c")
    assert view_.holds("b")
    assert not view_.holds_users("b")
    assert view_.holds_users("c")
    assert not TaskView("t", history=(agent(), user(MID))).started_by(MID)
    assert not TaskView("t").shows_start


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1970-01-01T00:00:10Z", 10.0),
        ("1970-01-01T00:00:10.5Z", 10.5),
        ("1970-01-01T00:00:10.123456789Z", 10.123456789),
        ("1970-01-01T01:00:10+01:00", 10.0),
        ("1970-01-01T00:00:10-00:30", 1810.0),
        ("1970-01-01 00:00:10Z", 10.0),
        ("2026-12-01T10:00:00Z", 1796119200.0),
    ],
)
def test_parse_timestamp_reads_rfc_3339(text: str, seconds: float) -> None:
    """ProtoJSON, 0.3 and offset timestamps become seconds since the epoch."""
    assert parse_timestamp(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-12-01T00:00:00+99:00",
        "2026-12-01T10:00:00",  # no offset: a naive local time decides nothing
        "2026-12-01 10:00:00.123",
        17,
        None,
    ],
)
def test_parse_timestamp_gives_none_for_anything_else(text: object) -> None:
    """What is not a timestamp with an offset has none."""
    assert parse_timestamp(text) is None


@given(st.one_of(st.text(max_size=80), st.integers(), st.none(), st.binary(max_size=20)))
def test_parse_timestamp_never_raises(value: object) -> None:
    """Whatever a peer writes as a timestamp, the reading never raises."""
    result = parse_timestamp(value)
    assert result is None or isinstance(result, float)


def test_resolution_values_and_work_operations() -> None:
    """The resolutions read as their values; SendMessage and its stream create work."""
    assert [str(r) for r in Resolution] == [
        "found", "resent", "not_found", "unresolved", "deduplicating"
    ]  # fmt: skip
    assert frozenset({"SendMessage", "SendStreamingMessage"}) == WORK_OPERATIONS


def test_a_full_page_where_no_task_shows_its_start_ends_the_search() -> None:
    """An agent that keeps no user message (a2a-java): one page tells; no more pages, one look."""
    blind = tuple(made(f"t{i}", agent()) for i in range(3))
    answer = pages(blind, blind, blind)
    found, queries = run(SentMessage(MID, "ctx-1"), ExactlyOnce(page_size=3), answer)
    assert isinstance(found, Unresolved)
    assert "keeps no record to find a task by" in found.why
    assert len(queries) == 1  # neither the second page nor the second look


def test_a_blind_page_still_finds_the_task_the_message_started() -> None:
    """The early end never hides a task the message started on that page."""
    page = (made("t0", agent()), made("t1", agent()), made("mine", user(MID)))
    found, _ = run(SentMessage(MID, "ctx-1"), ExactlyOnce(page_size=3), pages(page))
    assert found == Found(made("mine", user(MID)))


def test_a_second_task_moved_past_the_pages_is_caught_in_its_context() -> None:
    """A second task moved past the pages read is caught in the found task's context.

    A sub-task echoing the message first is found; its parent, moved by an update, is not on
    the pages read: the found task's context, listed, shows both, and it is no answer.
    """
    sub = made("sub", user(MID), agent(), context="c-9")
    parent = made("parent", user(MID), agent(), context="c-9")

    def answer(query: Any) -> TaskPage:
        assert isinstance(query, ListTasksQuery)
        if query.context_id == "c-9":
            return TaskPage((sub, parent), "", 2, 100)
        if not query.page_token:
            return TaskPage((sub,), "1", None, 100)
        return TaskPage((made("other", user("y"), context="c-2"),), "", None, 100)

    found, queries = run(SentMessage(MID), SETTINGS, answer, contract=None)
    assert found == Unresolved("more than one task was started by this messageId")
    assert [q.context_id for q in queries] == [None, None, "c-9"]


def test_the_one_task_of_its_context_stands() -> None:
    """Its context holds no other task started by the messageId: found, after one more read."""
    task = made("a", user(MID), agent(), context="c-1")

    def answer(query: Any) -> Any:
        if query.context_id == "c-1":
            return TaskPage((task, made("b", user("y"), context="c-1")), "", 2, 100)
        return TaskPage((task,), "", None, 100)

    found, queries = run(SentMessage(MID), SETTINGS, answer, contract=None)
    assert found == Found(task)
    assert queries[-1].context_id == "c-1"


def test_a_context_that_cannot_be_read_leaves_the_task_standing() -> None:
    """The context listing fails: the task found stands, as when its neighbours cannot be read."""
    task = made("a", user(MID), agent(), context="c-1")

    def answer(query: Any) -> Any:
        if query.context_id == "c-1":
            return Unanswered("the agent did not answer")
        return TaskPage((task,), "", None, 100)

    found, _ = run(SentMessage(MID), SETTINGS, answer, contract=None)
    assert found == Found(task)
