"""LoggingHook: one line per decision at the level of its action; no body, token or control."""

from __future__ import annotations

import json
import logging
import re

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors import CallFailed, ExactlyOnce, Guard, GuardTransport, RetryBudget
from a2a_client_errors.instrumentation import DEFAULT_LEVELS, LoggingHook
from a2a_client_errors.instrumentation._logging import _render
from a2a_client_errors.testing import FakeClock, error_response, jsonrpc_error

TOKEN = "sk-live-TOKEN-7f3a9c"
BODY_SECRET = "body-secret-4242"
URL_SECRET = "url-secret-9191"
HOSTILE = "boom\x1b[2J\r\nFORGED 2099-01-01 CRITICAL all is well\u202e\x00" + "x" * 500
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
LOGGER = "a2a_client_errors.decisions"


def _guard(
    clock: FakeClock | None = None, exactly_once: ExactlyOnce | None = None, **kwargs: object
) -> Guard:
    clock = clock or FakeClock()
    return Guard(
        hooks=[LoggingHook(**kwargs)],  # type: ignore[arg-type]
        clock=clock.now,
        sleep=clock.sleep,
        random=lambda: 0.5,
        exactly_once=exactly_once,
    )


def _everything(record: logging.LogRecord) -> str:
    """All a handler could write from a record: the message and every attribute, extras too."""
    fields = {key: value for key, value in vars(record).items() if key != "exc_info"}
    return record.getMessage() + "\n" + json.dumps(fields, default=repr)


def test_no_body_no_token_no_control_character_reaches_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A request with a bearer token and a secret body, a peer whose message has controls."""
    answers = iter(
        [
            httpx.Response(200, json=jsonrpc_error("INTERNAL_ERROR", message=HOSTILE)),
            httpx.Response(200, json=jsonrpc_error("INVALID_AGENT_RESPONSE", message=HOSTILE)),
        ]
    )
    seen: list[httpx.Request] = []

    def peer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if json.loads(request.content)["method"] == "ListTasks":  # the look-up: not there
            other = {
                "id": "t-0",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "history": [{"messageId": "m-0", "role": "ROLE_USER"}],
            }
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": 2, "result": {"tasks": [other]}}
            )
        return next(answers)

    # A listing contract, so that "not there" allows the resend whose lines are checked too.
    guard = _guard(exactly_once=ExactlyOnce(listed_within={"https://agent.example:443": 0.0}))
    transport = GuardTransport(guard, httpx.MockTransport(peer), raise_failures=True)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "parts": [{"text": BODY_SECRET}]}},
    }
    url = f"https://agent.example/a2a?api_key={URL_SECRET}"
    with (
        caplog.at_level(logging.DEBUG, logger=LOGGER),
        httpx.Client(transport=transport, headers={"Authorization": f"Bearer {TOKEN}"}) as client,
        pytest.raises(CallFailed),
    ):
        client.post(url, json=body)
    assert all(TOKEN in request.headers["authorization"] for request in seen)  # it was sent
    records = [r for r in caplog.records if r.name == LOGGER]
    # The retry, then the resend as it goes out (the look-up found nothing); the broken answer
    # looked up too (nothing there: not resent), then the report.
    assert [r.levelname for r in records] == ["INFO", "INFO", "INFO", "ERROR"]
    assert records[1].resolution == "resent"  # type: ignore[attr-defined]
    assert records[2].resolution == "not_found"  # type: ignore[attr-defined]
    for record in records:
        text = _everything(record)
        for secret in (TOKEN, BODY_SECRET, URL_SECRET, "Bearer", "authorization"):
            assert secret not in text
        assert not CONTROL.search(record.getMessage())
    for record in (records[0], records[3]):  # the decisions, which carry the peer's message
        assert not CONTROL.search(record.peer_message)  # type: ignore[attr-defined]
        assert "\\x1b[2J\\r\\nFORGED" in record.getMessage()  # rendered visibly
        assert len(record.peer_message) < 260  # type: ignore[attr-defined]
        assert record.peer_message.endswith("more)")  # type: ignore[attr-defined]


def test_a_peer_url_given_as_the_key_loses_its_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``peer=`` with user info and a query: the log keeps the host and path only."""
    guard = _guard()
    peer = f"https://bot:{URL_SECRET}@agent.example:8443/a2a?token={URL_SECRET}#{URL_SECRET}"
    with caplog.at_level(logging.DEBUG, logger=LOGGER), pytest.raises(CallFailed):
        guard.call(lambda: error_response("TASK_NOT_FOUND"), operation="GetTask", peer=peer)
    (record,) = caplog.records
    assert record.peer == "https://agent.example:8443/a2a"  # type: ignore[attr-defined]
    assert URL_SECRET not in _everything(record)


@pytest.mark.parametrize(
    ("answer", "operation", "level", "action"),
    [
        (error_response("TASK_NOT_CANCELABLE"), "CancelTask", "INFO", "reconcile"),
        (error_response("TASK_NOT_FOUND"), "GetTask", "INFO", "reconcile"),
        (error_response("UNSUPPORTED_OPERATION"), "SubscribeToTask", "INFO", "degrade"),
        (error_response("VERSION_NOT_SUPPORTED"), "SendMessage", "WARNING", "fix_request"),
        (error_response("INVALID_AGENT_RESPONSE"), "SendMessage", "ERROR", "report"),
        (error_response("SHINY_NEW_REASON"), "SendMessage", "ERROR", "report"),
        (httpx.Response(401), "GetTask", "WARNING", "auth"),
    ],
)
def test_one_line_at_the_level_of_the_action(
    caplog: pytest.LogCaptureFixture, answer: object, operation: str, level: str, action: str
) -> None:
    """Each final decision is one line; TASK_NOT_CANCELABLE is INFO, a broken peer ERROR."""
    with caplog.at_level(logging.DEBUG, logger=LOGGER), pytest.raises(CallFailed):
        _guard().call(lambda: answer, operation=operation, peer="billing")
    (record,) = caplog.records
    assert record.levelname == level
    assert record.action == action  # type: ignore[attr-defined]
    assert record.operation == operation  # type: ignore[attr-defined]
    assert record.peer == "billing"  # type: ignore[attr-defined]
    assert record.attempt == 1  # type: ignore[attr-defined]
    assert record.source  # type: ignore[attr-defined]


def test_retries_then_retries_spent(caplog: pytest.LogCaptureFixture) -> None:
    """Each retry is an INFO line with its delay; the give-up is one WARNING line."""
    with caplog.at_level(logging.DEBUG, logger=LOGGER), pytest.raises(CallFailed):
        _guard().call(lambda: httpx.Response(503), operation="GetTask", peer="billing")
    assert [r.levelname for r in caplog.records] == ["INFO", "INFO", "WARNING"]
    first, second, last = caplog.records
    assert (first.attempt, first.delay) == (1, 0.25)  # type: ignore[attr-defined]
    assert (second.attempt, second.delay) == (2, 0.5)  # type: ignore[attr-defined]
    assert "retry in 0.250s" in first.getMessage()
    assert last.give_up == "attempts"  # type: ignore[attr-defined]
    assert "HTTP_503" not in last.getMessage()  # logs name the reason, or its absence
    assert "no reason" in last.getMessage()


def test_a_budget_refusal_is_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A retry refused by the budget is one WARNING line naming the budget."""
    clock = FakeClock()
    guard = Guard(
        hooks=[LoggingHook()],
        budget=RetryBudget(capacity=1),
        clock=clock.now,
        sleep=clock.sleep,
        random=lambda: 0.5,
    )
    with caplog.at_level(logging.DEBUG, logger=LOGGER), pytest.raises(CallFailed):
        guard.call(lambda: httpx.ConnectError("refused"), operation="GetTask")
    assert [r.levelname for r in caplog.records] == ["INFO", "WARNING"]
    assert caplog.records[-1].give_up == "budget"  # type: ignore[attr-defined]
    assert "retry budget" in caplog.records[-1].getMessage()
    assert "transport connect" in caplog.records[-1].getMessage()


def test_ok_is_silent_and_tasks_are_results(caplog: pytest.LogCaptureFixture) -> None:
    """A success logs nothing; a FAILED task is an INFO line, a COMPLETED one DEBUG."""
    guard = _guard()
    task = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"id": "t-1", "status": {"state": "TASK_STATE_FAILED"}},
    }
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        guard.call(lambda: task, operation="GetTask")
        assert caplog.records == []
        guard.record_task(task, skill="summarise\x1b", peer="billing", operation="GetTask")
        guard.record_task({"id": "t-2", "status": {"state": "TASK_STATE_COMPLETED"}})
    failed, done = caplog.records
    assert failed.levelname == "INFO"
    assert failed.state == "TASK_STATE_FAILED"  # type: ignore[attr-defined]
    assert failed.skill == "summarise\\x1b"  # type: ignore[attr-defined]
    assert "not a call error" in failed.getMessage()
    assert done.levelname == "DEBUG"


def test_levels_can_change_and_disabled_levels_cost_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``levels=`` moves a kind of line; a level the logger ignores is not even formatted."""
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(CallFailed):
        _guard(levels={"retry": logging.DEBUG}).call(lambda: httpx.Response(503))
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert set(DEFAULT_LEVELS) >= {"retry", "reconcile", "report", "auth", "budget_exhausted"}
    with pytest.raises(ValueError, match="unknown kinds"):
        LoggingHook(levels={"retyr": logging.DEBUG})
    with pytest.raises(ValueError, match="max_message"):
        LoggingHook(max_message=0)


def test_a_logger_given_is_used() -> None:
    """``logger=`` receives the lines."""
    lines: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record)

    logger = logging.getLogger("orchestrator.a2a")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Keep())
    logger.propagate = False
    try:
        with pytest.raises(CallFailed):
            Guard(hooks=[LoggingHook(logger=logger)]).call(
                lambda: error_response("TASK_NOT_FOUND"), operation="GetTask"
            )
    finally:
        logger.handlers.clear()
        logger.propagate = True
    assert [r.reason for r in lines] == ["TASK_NOT_FOUND"]  # type: ignore[attr-defined]


@given(st.text(), st.integers(min_value=1, max_value=300))
def test_any_peer_text_renders_safely(text: str, limit: int) -> None:
    """Whatever a peer sends, the rendering has no control character and a bounded length."""
    rendered = _render(text, limit)
    assert not CONTROL.search(rendered)
    assert len(rendered) <= limit + len(f"… ({6 * len(text)} more)")


def test_a_shared_budget_falling_back_warns_and_its_recovery_informs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis gone: WARNING with the cause (escaped) and what decides meanwhile; back: INFO."""
    from a2a_client_errors import RetryBudget
    from a2a_client_errors._retry import BudgetState
    from tests.metrics_support import SharedBudgets

    budgets = SharedBudgets(RetryBudget)
    Guard(hooks=[LoggingHook()], budget=budgets)
    peer = "https://user:secret@billing.example:443/a2a?token=abc"
    with caplog.at_level(logging.DEBUG, logger="a2a_client_errors.decisions"):
        budgets.tell(peer, BudgetState.LOCAL)
        budgets.tell(peer, BudgetState.SHARED)
    fell, back = caplog.records
    assert (fell.levelno, back.levelno) == (logging.WARNING, logging.INFO)
    assert "unreachable (ConnectionError): a local bucket decides" in fell.getMessage()
    assert fell.budget_state == "local"  # type: ignore[attr-defined]
    assert back.budget_state == "shared"  # type: ignore[attr-defined]
    assert fell.tokens == 10.0  # type: ignore[attr-defined]
    for record in (fell, back):
        assert "secret" not in _everything(record)
        assert "token=abc" not in _everything(record)
