"""Label folding: every value a Guard reports becomes one of a bounded set."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors import Action, CallRecord, Decision, GiveUp, Reason, normalize
from a2a_client_errors.instrumentation import (
    METRICS,
    OPERATIONS,
    Labels,
    prometheus_series,
    safe_peer,
)
from a2a_client_errors.instrumentation._labels import TASK_STATES
from a2a_client_errors.testing import error_response


def _decision(x: object) -> Decision:
    error = normalize(x)
    assert error is not None
    return Decision(Action.REPORT, error.reason, error=error)


def test_default_peers_keep_the_first_ones_then_fold() -> None:
    """By default the first ``max_peers`` peers keep their name; later ones are "other"."""
    labels = Labels(max_peers=2)
    assert labels.peer("https://a.example:443") == "https://a.example:443"
    assert labels.peer("https://b.example:443") == "https://b.example:443"
    assert labels.peer("https://c.example:443") == "other"
    assert labels.peer("https://a.example:443") == "https://a.example:443"  # still kept
    assert labels.peer("https://c.example:443") == "other"  # and still folded


def test_an_allow_list_folds_everything_else() -> None:
    """With an allow-list, only its names are kept, however many others come."""
    labels = Labels(peers=["billing", "https://search.example:443"])
    assert labels.peer("billing") == "billing"
    assert labels.peer("https://search.example:443") == "https://search.example:443"
    assert {labels.peer(f"peer-{n}") for n in range(1000)} == {"other"}


def test_an_allow_list_matches_a_url_without_its_credentials() -> None:
    """A peer URL with user info or a query is matched by its safe form."""
    labels = Labels(peers=["https://search.example:443/a2a"])
    assert (
        labels.peer("https://u:p@search.example:443/a2a?key=1") == "https://search.example:443/a2a"
    )


def test_a_mapping_function_names_peers_and_none_folds() -> None:
    """A function maps a peer key to a label; None, empty or non-str answers are "other"."""
    answers = {"https://a.example:443": "a", "https://b.example:443": None, "x": ""}

    def name(peer: str) -> str | None:
        return answers.get(peer, "c" if peer.startswith("https://c.") else None)

    labels = Labels(peers=name)
    assert labels.peer("https://a.example:443") == "a"
    assert labels.peer("https://b.example:443") == "other"
    assert labels.peer("x") == "other"
    assert labels.peer("https://c.example:443") == "c"
    assert labels.peer("https://z.example:443") == "other"


def test_a_mapping_function_is_still_capped() -> None:
    """A function that names every peer differently still gives at most ``max_peers``."""
    labels = Labels(peers=lambda peer: peer.upper(), max_peers=3)
    values = {labels.peer(f"peer-{n}") for n in range(50)}
    assert values == {"PEER-0", "PEER-1", "PEER-2", "other"}


def test_a_failing_mapping_function_folds_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    """A mapping function that raises gives "other", and is reported once."""

    def broken(peer: str) -> str:
        raise RuntimeError(peer)

    labels = Labels(peers=broken)
    with caplog.at_level("WARNING", logger="a2a_client_errors"):
        assert [labels.peer(f"p{n}") for n in range(3)] == ["other"] * 3
    assert len([r for r in caplog.records if "label function failed" in r.getMessage()]) == 1


def test_one_string_is_not_an_allow_list() -> None:
    """``peers="billing"`` (a string, not a list) is refused rather than read letter by letter."""
    with pytest.raises(TypeError, match="allow-list"):
        Labels(peers="billing")
    with pytest.raises(ValueError, match="max_skills"):
        Labels(max_skills=-1)


def test_skills_unknown_allowed_and_folded() -> None:
    """A skill not given is "unknown"; one outside the allow-list is "other"."""
    labels = Labels(skills=["summarise"])
    assert labels.skill(None) == "unknown"
    assert labels.skill("") == "unknown"
    assert labels.skill("summarise") == "summarise"
    assert labels.skill("translate") == "other"
    assert Labels().skill(" \r ") == "unknown"
    assert Labels().peer("") == "unknown"
    assert Labels(max_skills=0).skill("summarise") == "other"


def test_methods_come_from_the_a2a_operations() -> None:
    """The method label is an A2A operation, "other", or "unknown"."""
    assert len(OPERATIONS) == 11
    for operation in OPERATIONS:
        assert Labels.method(operation) == operation
    assert Labels.method("tasks/get") == "other"  # a 0.3 name the Guard did not translate
    assert Labels.method("DROP TABLE") == "other"
    assert Labels.method(None) == "unknown"


def test_reasons_known_unknown_and_missing() -> None:
    """Known reasons keep their name, unknown ones are OTHER, missing ones name the signal."""
    assert Labels.reason(_decision(error_response("TASK_NOT_FOUND"))) == "TASK_NOT_FOUND"
    assert Labels.reason(_decision(error_response("SOMETHING_NEW"))) == "OTHER"
    assert Labels.reason(_decision(httpx.Response(503, text="down"))) == "HTTP_503"
    assert Labels.reason(_decision(httpx.ConnectError("refused"))) == "TRANSPORT_CONNECT"
    assert Labels.reason(_decision(httpx.ReadTimeout("slow"))) == "TRANSPORT_TIMEOUT"
    assert Labels.reason(Decision(Action.OK)) == "UNSPECIFIED"
    no_reason = _decision({"jsonrpc": "2.0", "id": 1, "error": {"code": -32050, "message": "?"}})
    assert Labels.reason(no_reason) == "UNSPECIFIED"
    for reason in Reason:
        assert Labels.reason(Decision(Action.REPORT, reason)) == reason.value


def test_reasons_from_grpc_statuses() -> None:
    """A gRPC status with no reason is GRPC_<CODE>; an unknown code name is UNSPECIFIED."""
    from a2a_client_errors import CallError
    from a2a_client_errors.types import ErrorKind, Source, WireShape

    def grpc(name: str) -> Decision:
        error = CallError(
            ErrorKind.TRANSPORT, None, Source.STATUS_FALLBACK, WireShape.GRPC, grpc_status=name
        )
        return Decision(Action.RETRY, None, error=error)

    assert Labels.reason(grpc("UNAVAILABLE")) == "GRPC_UNAVAILABLE"
    assert Labels.reason(grpc("NOT_A_CODE")) == "UNSPECIFIED"


def test_task_states_are_bounded() -> None:
    """Task states keep their 1.0 names; anything else is OTHER."""
    assert len(TASK_STATES) == 9
    for state in TASK_STATES:
        assert Labels.state(state) == state
    assert Labels.state("TASK_STATE_EXPLODED") == "OTHER"


def test_safe_peer_drops_credentials_and_escapes() -> None:
    """A peer key loses user info, query and fragment; control characters are escaped."""
    assert safe_peer("https://user:tok@a.example:8443/x?api_key=s#f") == "https://a.example:8443/x"
    assert safe_peer("bill\x1b[31m\ning") == "bill\\x1b[31m\\ning"
    assert safe_peer("  billing \n") == "billing"
    assert safe_peer("http://[::1") == "http://[::1"  # unparsable URL: kept, escaped
    assert len(safe_peer("p" * 1000)) == 128


def test_folding_is_thread_safe_and_bounded() -> None:
    """Many threads folding many peers never exceed the cap."""
    labels = Labels(max_peers=5)
    seen: set[str] = set()
    lock = threading.Lock()

    def work(base: int) -> None:
        got = {labels.peer(f"peer-{base * 100 + n}") for n in range(100)}
        with lock:
            seen.update(got)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert "other" in seen
    assert len(seen - {"other"}) == 5


@given(st.text(), st.text() | st.none())
def test_folding_never_raises(peer: str, skill: str | None) -> None:
    """Whatever the peer key or skill, folding gives a short string."""
    labels = Labels(max_peers=3, max_skills=3)
    assert 0 < len(labels.peer(peer)) <= 128
    assert 0 < len(labels.skill(skill)) <= 128
    assert Labels.method(skill) in {*OPERATIONS, "other", "unknown"}


def test_prometheus_series_names_every_metric() -> None:
    """The series list has every metric, with ``_total`` for counters and ``le`` on buckets."""
    series = prometheus_series()
    assert "a2a_client_errors_total" in series
    assert series["a2a_client_errors_total"] == ("method", "reason", "action", "peer")
    assert series["a2a_client_retry_delay_seconds_bucket"][-1] == "le"
    assert "a2a_client_retry_budget_tokens" in series
    assert len({spec.key for spec in METRICS}) == len(METRICS) == 15
    assert all(name.startswith("x_") for name in prometheus_series("x"))


def test_give_up_labels_are_the_give_up_kinds_and_the_docs_list_them() -> None:
    """``give_up`` is a `GiveUp` value or empty; docs/operations.md lists exactly those."""
    assert Labels.give_up(Decision(Action.OK)) == ""
    for kind in GiveUp:
        assert Labels.give_up(Decision(Action.RETRY, give_up=kind)) == kind.value
    page = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text("utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| `give_up` |")]
    assert set(re.findall(r"`([a-z_]+)`", row)) - {"give_up"} == {kind.value for kind in GiveUp}


def test_a_call_that_ended_is_never_labelled_retry() -> None:
    """The outcome of a call that ended on a retry decision is ``gave_up``, whatever its kind."""
    for decision in (
        Decision(Action.RETRY, give_up=GiveUp.BUDGET),
        Decision(Action.RETRY, delay=0.5),  # a door ended it before the retry went
    ):
        record = CallRecord(decision, "p", "GetTask", 1, 0.0)
        assert record.outcome == "gave_up"
    assert CallRecord(Decision(Action.REPORT), "p", "GetTask", 1, 0.0).outcome == "report"
    assert CallRecord(Decision(Action.OK), "p", "GetTask", 1, 0.0).outcome == "ok"
