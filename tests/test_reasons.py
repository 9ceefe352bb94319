"""The reason table: every reason round-trips through every column, every code has an action."""

from __future__ import annotations

import pytest

from a2a_client_errors import _reasons as reasons
from a2a_client_errors._reasons import (
    JSONRPC_CODES,
    PROBLEM_TYPES,
    REASON_ACTIONS,
    ROWS,
    Action,
    Reason,
    canonical_reason,
    grpc_code_action,
    http_status_action,
    row_for,
)
from tests.conftest import NINE, NINE_ACTIONS, NINE_REASONS, PROBLEM_PREFIX

ROW_IDS = [row.reason.value for row in ROWS]

# All 17 google.rpc.Code names, written out (google/rpc/code.proto).
GRPC_CODE_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)

# The gRPC codes whose default action the brief fixes (point 6 and point 3).
GRPC_EXPECTED = {
    "OK": Action.OK,
    "UNAVAILABLE": Action.RETRY,
    "DEADLINE_EXCEEDED": Action.RETRY,
    "RESOURCE_EXHAUSTED": Action.RETRY,
    "INTERNAL": Action.RETRY,
    "UNKNOWN": Action.RETRY,
    "UNAUTHENTICATED": Action.AUTH,
    "PERMISSION_DENIED": Action.AUTH,
    "NOT_FOUND": Action.RECONCILE,
    "INVALID_ARGUMENT": Action.FIX_REQUEST,
}

# The HTTP statuses whose default action the brief fixes; other 4xx are fix_request.
HTTP_EXPECTED = {
    401: Action.AUTH,
    403: Action.AUTH,
    404: Action.RECONCILE,
    408: Action.RETRY,
    409: Action.RECONCILE,
    415: Action.FIX_REQUEST,
    429: Action.RETRY,
    500: Action.RETRY,
    502: Action.RETRY,
    503: Action.RETRY,
    504: Action.RETRY,
}


def _kebab(reason: str) -> str:
    return reason.lower().replace("_", "-")


# --- the nine, literally ---------------------------------------------------------------------


@pytest.mark.parametrize("expected", NINE, ids=NINE_REASONS)
def test_nine_rows_have_the_spec_columns(expected: tuple[str, int, str, int, str, int]) -> None:
    """Each A2A error has the 1.0.1 and 1.0.0 codes of protocol notes 2.1 and 2.4."""
    reason, jsonrpc, grpc, http, grpc_legacy, http_legacy = expected
    row = Reason(reason).row
    assert row.spec is True
    assert (row.jsonrpc, row.grpc, row.http) == (jsonrpc, grpc, http)
    assert (row.grpc_legacy, row.http_legacy) == (grpc_legacy, http_legacy)


def test_exactly_nine_reasons_are_a2a() -> None:
    """The spec rows are exactly the nine A2A errors, in the spec's order."""
    assert tuple(row.reason.value for row in ROWS if row.spec) == NINE_REASONS
    assert {r.value for r in Reason if r.is_a2a} == set(NINE_REASONS)


@pytest.mark.parametrize("reason", NINE_REASONS)
def test_nine_problem_type_uris(reason: str) -> None:
    """Each A2A error has its RC-era problem type URI, and the URI maps back to it."""
    uri = PROBLEM_PREFIX + _kebab(reason)
    assert Reason(reason).row.problem_type == uri
    assert PROBLEM_TYPES[uri] is Reason(reason)


def test_only_the_nine_have_problem_types() -> None:
    """Problem type URIs exist for the nine A2A errors and nothing else."""
    assert {r.value for r in PROBLEM_TYPES.values()} == set(NINE_REASONS)
    assert all(row.problem_type is None for row in ROWS if not row.spec)


@pytest.mark.parametrize(("reason", "code"), [(r[0], r[1]) for r in NINE], ids=NINE_REASONS)
def test_nine_jsonrpc_codes_map_to_their_reason(reason: str, code: int) -> None:
    """JSON-RPC -32001..-32009 each name their A2A reason."""
    assert JSONRPC_CODES[code] is Reason(reason)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (-32700, "PARSE_ERROR"),
        (-32600, "INVALID_REQUEST"),
        (-32601, "METHOD_NOT_FOUND"),
        (-32602, "INVALID_PARAMS"),
        (-32603, "INTERNAL_ERROR"),
    ],
    ids=["parse", "invalid-request", "method-not-found", "invalid-params", "internal"],
)
def test_standard_jsonrpc_codes(code: int, reason: str) -> None:
    """The standard JSON-RPC codes map to the reasons the SDKs send for them."""
    assert JSONRPC_CODES[code] is Reason(reason)


@pytest.mark.parametrize(("reason", "action"), NINE_ACTIONS.items(), ids=list(NINE_ACTIONS))
def test_nine_default_actions(reason: str, action: str) -> None:
    """Each A2A reason has the brief's default action."""
    assert REASON_ACTIONS[reason] == Action(action)
    assert Reason(reason).row.action == Action(action)


@pytest.mark.parametrize(
    ("reason", "action"),
    [
        ("PARSE_ERROR", "fix_request"),
        ("INVALID_REQUEST", "fix_request"),
        ("METHOD_NOT_FOUND", "fix_request"),
        ("INVALID_PARAMS", "fix_request"),
        ("INTERNAL_ERROR", "retry"),
        ("UNAUTHENTICATED", "auth"),
        ("UNAUTHORIZED", "auth"),
    ],
    ids=str,
)
def test_extra_reason_actions(reason: str, action: str) -> None:
    """Standard-code reasons are fix_request, INTERNAL_ERROR retries, auth reasons are auth."""
    assert REASON_ACTIONS[reason] == Action(action)


# --- round trips through every column ------------------------------------------------------


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_every_reason_has_a_row_and_an_action(row: reasons.ReasonRow) -> None:
    """Every Reason has exactly its row and a default action."""
    assert row.reason.row is row
    assert REASON_ACTIONS[row.reason.value] is row.action
    assert isinstance(row.action, Action)


def test_every_reason_member_is_in_the_table() -> None:
    """No Reason lacks a row and no row names a reason twice."""
    assert [row.reason for row in ROWS] == list(Reason)


@pytest.mark.parametrize(
    "row", [row for row in ROWS if row.jsonrpc is not None], ids=lambda row: row.reason.value
)
def test_jsonrpc_column_round_trips(row: reasons.ReasonRow) -> None:
    """A row's JSON-RPC code maps back to its reason."""
    assert row.jsonrpc is not None
    assert JSONRPC_CODES[row.jsonrpc] is row.reason


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_spellings_canonicalise(row: reasons.ReasonRow) -> None:
    """Name, class name, kebab, lower case, Java FQCN and aliases all give the reason."""
    spellings = [
        row.reason.value,
        row.error,
        _kebab(row.reason.value),
        row.reason.value.lower(),
        f"io.a2a.spec.{row.error}",
        f"org.a2aproject.sdk.spec.{row.error}",
        f"  {row.reason.value}  ",
        *row.aliases,
    ]
    for spelling in spellings:
        assert canonical_reason(spelling) is row.reason, spelling
        found = row_for(spelling)
        assert found is not None
        assert found.reason is row.reason


@pytest.mark.parametrize(
    ("alias", "reason"),
    [
        ("EXTENDED_CARD_NOT_CONFIGURED", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        ("UNSUPPORTED_CONTENT_TYPE", "CONTENT_TYPE_NOT_SUPPORTED"),
        ("SERVER_ERROR", "INTERNAL_ERROR"),
        ("JSON_PARSE", "PARSE_ERROR"),
    ],
    ids=["ext-card", "content-type", "server-error", "json-parse"],
)
def test_aliases_seen_in_the_wild(alias: str, reason: str) -> None:
    """The aliases the notes name (a2a-rs, a2a-go) canonicalise."""
    assert canonical_reason(alias) is Reason(reason)


@pytest.mark.parametrize(
    "unknown",
    ["QUOTA_GONE", "TASK_NOT_FOUNDISH", "Some Other Thing", "io.example.WeirdError", "X"],
)
def test_unknown_reasons_are_kept_as_sent(unknown: str) -> None:
    """A reason the table does not know comes back as the string sent, never a Reason."""
    found = canonical_reason(unknown)
    assert found == unknown
    assert not isinstance(found, Reason)
    assert row_for(unknown) is None


def test_unknown_reason_is_stripped_only() -> None:
    """An unknown reason keeps its spelling; only surrounding whitespace goes."""
    assert canonical_reason("  Custom_Reason ") == "Custom_Reason"


# --- status and code tables --------------------------------------------------------------


def test_grpc_table_has_all_seventeen_codes() -> None:
    """The table knows every google.rpc.Code name with its number."""
    assert tuple(reasons.GRPC_CODES) == GRPC_CODE_NAMES
    assert [reasons.GRPC_CODES[name] for name in GRPC_CODE_NAMES] == list(range(17))


@pytest.mark.parametrize("name", GRPC_CODE_NAMES)
def test_every_grpc_code_has_a_decision(name: str) -> None:
    """Every gRPC code gives an Action, and the ones the brief fixes give theirs."""
    action = grpc_code_action(name)
    assert isinstance(action, Action)
    if name in GRPC_EXPECTED:
        assert action is GRPC_EXPECTED[name]
    elif name != "OK":
        assert action is not Action.OK


@pytest.mark.parametrize("status", range(100, 600))
def test_every_http_status_has_an_action(status: int) -> None:
    """Every HTTP status has an Action; 4xx are fix_request except the ones the brief names."""
    action = http_status_action(status)
    assert isinstance(action, Action)
    if status in HTTP_EXPECTED:
        assert action is HTTP_EXPECTED[status]
    elif 400 <= status < 500:
        assert action is Action.FIX_REQUEST
    elif 500 <= status < 600:
        assert action is not Action.OK


@pytest.mark.parametrize(
    ("status", "reason"),
    [(404, "TASK_NOT_FOUND"), (409, "TASK_NOT_CANCELABLE"), (415, "CONTENT_TYPE_NOT_SUPPORTED")],
    ids=["404", "409", "415"],
)
def test_statuses_that_name_one_reason(status: int, reason: str) -> None:
    """Only 404, 409 and 415 name one A2A reason on their own."""
    assert reasons.status_reason(status) is Reason(reason)


@pytest.mark.parametrize("status", [400, 422, 500, 501, 502, 503, 504])
def test_ambiguous_statuses_name_no_reason(status: int) -> None:
    """400 (seven reasons), 500/502 (transient) and the rest name no reason alone."""
    assert reasons.status_reason(status) is None


@pytest.mark.parametrize(
    "name", ["FAILED_PRECONDITION", "UNIMPLEMENTED", "INVALID_ARGUMENT", "INTERNAL", "UNKNOWN"]
)
def test_ambiguous_grpc_codes_name_no_reason(name: str) -> None:
    """Codes shared by several reasons (or transient ones) name no reason alone."""
    assert reasons.grpc_reason(name) is None


def test_not_found_names_task_not_found() -> None:
    """NOT_FOUND names TASK_NOT_FOUND in both tables."""
    assert reasons.grpc_reason("NOT_FOUND") is Reason.TASK_NOT_FOUND


def test_action_has_exactly_the_seven_values() -> None:
    """Action is a str enum with exactly the design card's seven values."""
    assert {a.value for a in Action} == {
        "ok",
        "retry",
        "reconcile",
        "degrade",
        "fix_request",
        "report",
        "auth",
    }
    assert len(Action) == 7
    assert all(isinstance(a, str) for a in Action)
    assert str(Action.FIX_REQUEST) == "fix_request"


def test_reason_is_a_str_enum() -> None:
    """Reason members are their UPPER_SNAKE strings."""
    assert Reason.TASK_NOT_FOUND == "TASK_NOT_FOUND"
    assert str(Reason.VERSION_NOT_SUPPORTED) == "VERSION_NOT_SUPPORTED"
    assert all(r.value == r.name for r in Reason)


@pytest.mark.parametrize(
    ("state", "canonical"),
    [
        ("input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
        ("failed", "TASK_STATE_FAILED"),
        ("cancelled", "TASK_STATE_CANCELED"),
        ("TASK_STATE_REJECTED", "TASK_STATE_REJECTED"),
        ("mystery", "mystery"),
    ],
    ids=str,
)
def test_task_states_canonicalise(state: str, canonical: str) -> None:
    """0.3 kebab task states map to the 1.0 names; unknown ones are kept."""
    assert reasons.canonical_task_state(state) == canonical


def test_task_state_sets() -> None:
    """Terminal and interrupted states are the spec's (§4.1.3)."""
    assert {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
    } == reasons.TERMINAL_STATES
    assert {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"} == reasons.INTERRUPTED_STATES


# --- delivery: what a status alone says reached the agent ---------------------------------------

# Written out, not derived: the gRPC codes after which the call may have been carried out.
GRPC_UNKNOWN_DELIVERY = frozenset(
    {"OK", "CANCELLED", "UNKNOWN", "DEADLINE_EXCEEDED", "INTERNAL", "DATA_LOSS", "UNAVAILABLE"}
)


@pytest.mark.parametrize("name", GRPC_CODE_NAMES)
def test_every_grpc_code_has_a_delivery(name: str) -> None:
    """Each gRPC code alone is unknown (may have run) or not processed (refused), by the table."""
    delivery = reasons.Delivery
    expected = delivery.UNKNOWN if name in GRPC_UNKNOWN_DELIVERY else delivery.NOT_PROCESSED
    assert reasons.status_delivery(None, name) is expected


def test_the_more_cautious_of_two_statuses_decides() -> None:
    """A gRPC code and an HTTP status: unknown when either says so; a 2xx says nothing."""
    delivery = reasons.status_delivery
    unknown, refused = reasons.Delivery.UNKNOWN, reasons.Delivery.NOT_PROCESSED
    assert delivery(200, "INVALID_ARGUMENT") is refused  # gRPC over HTTP/2 answers 200
    assert delivery(200, "UNAVAILABLE") is unknown
    assert delivery(200, "UNAVAILABLE", answered=True) is refused
    assert delivery(400, "INTERNAL") is unknown
    assert delivery(400, "INVALID_ARGUMENT") is refused
    assert delivery(503, "UNAVAILABLE", answered=True) is refused
    assert delivery(503, "INTERNAL", answered=True) is unknown
    for status in (500, 502, 504):
        assert delivery(status, "UNAVAILABLE", answered=True, hinted=True) is unknown
        assert delivery(status, "INVALID_ARGUMENT", answered=True) is unknown


@pytest.mark.parametrize("said", ["has_details", "hinted", "answered"])
def test_grpc_unavailable_the_server_says_is_not_processed(said: str) -> None:
    """UNAVAILABLE with details, a pushback, or in a body the server wrote: not processed."""
    assert reasons.status_delivery(None, "UNAVAILABLE", **{said: True}) is (
        reasons.Delivery.NOT_PROCESSED
    )


@pytest.mark.parametrize("name", sorted(GRPC_UNKNOWN_DELIVERY - {"UNAVAILABLE"}))
def test_nothing_said_makes_other_grpc_codes_not_processed(name: str) -> None:
    """INTERNAL, UNKNOWN, ... stay unknown with details, a hint and a body of the server's."""
    found = reasons.status_delivery(None, name, has_details=True, hinted=True, answered=True)
    assert found is reasons.Delivery.UNKNOWN


def _http_delivery(status: int) -> reasons.Delivery:
    """The expected delivery of a bare HTTP status, written out by its meaning."""
    if 200 <= status < 300:
        return reasons.Delivery.UNKNOWN  # an error on a success: the work may be done
    if status in (301, 302, 303):
        return reasons.Delivery.UNKNOWN  # post/redirect/get: the POST may have been carried out
    if status >= 500:
        if status in (501, 505):
            return reasons.Delivery.NOT_PROCESSED
        return reasons.Delivery.UNKNOWN  # 503 too: a proxy may answer it after forwarding
    return reasons.Delivery.NOT_PROCESSED


@pytest.mark.parametrize("status", range(100, 600))
def test_every_http_status_has_a_delivery(status: int) -> None:
    """1xx, 3xx but 301-303, 4xx, 501/505: not processed; 2xx, 301-303, other 5xx: unknown."""
    assert reasons.status_delivery(status, None) is _http_delivery(status)


@pytest.mark.parametrize("status", range(100, 600))
@pytest.mark.parametrize("said", ["has_details", "hinted", "answered"])
def test_only_503_is_not_processed_when_the_server_says_it(status: int, said: str) -> None:
    """A hint or the server's own body turns a 503 into not processed, and no other status."""
    found = reasons.status_delivery(status, None, **{said: True})
    expected = reasons.Delivery.NOT_PROCESSED if status == 503 else _http_delivery(status)
    assert found is expected


def test_no_status_at_all_is_unknown() -> None:
    """Neither an HTTP status nor a gRPC code: unknown."""
    assert reasons.status_delivery(None, None) is reasons.Delivery.UNKNOWN


def test_unknown_delivery_reasons_are_the_three() -> None:
    """Only INTERNAL_ERROR, UNKNOWN_ERROR and INVALID_AGENT_RESPONSE may follow done work."""
    assert {
        Reason.INTERNAL_ERROR,
        Reason.UNKNOWN_ERROR,
        Reason.INVALID_AGENT_RESPONSE,
    } == reasons.UNKNOWN_DELIVERY_REASONS
    assert frozenset({501, 505}) == reasons.NOT_PROCESSED_5XX
    assert frozenset({503}) == reasons.SAID_5XX
    assert str(reasons.Delivery.NOT_SENT) == "not_sent"
