"""The probe against the real a2a-sdk server, directly and behind a loopback gateway.

Every outcome is asserted per check and binding: what a2a-sdk 1.3.0 gets right passes, and its
two gaps fail (it never enforces a required extension, and its gRPC handler ignores
``A2A-Version``); the advisory resend check fails on it (two tasks for one messageId) without
changing the exit status, and passes once the handler is wrapped in ``deduplicate``. Behind a
gateway that strips error details, or replaces them with its own page, the checks that cross it
fail and say what was lost and which hop answered.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
from starlette.responses import Response

from a2a_client_errors.cli import main
from a2a_client_errors.probe import CHECKS, CheckStatus, ProbeReport, probe
from a2a_client_errors.testing.peer import EmbeddedPeer
from tests.e2e.proxy import Proxy

if TYPE_CHECKING:
    from collections.abc import Iterator

    from starlette.requests import Request

pytestmark = pytest.mark.e2e
BINDINGS = ("jsonrpc", "http+json", "grpc")
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


def _all(status: str) -> dict[str, str]:
    return dict.fromkeys(BINDINGS, status)


# What the probe finds on a2a-sdk 1.3.0 with streaming on (the `peer` fixture).
A2A_SDK_1_3: dict[str, dict[str, str]] = {
    "task_not_found": _all(PASSED),
    "task_not_cancelable": _all(PASSED),
    "streaming_not_supported": _all(SKIPPED),
    "subscribe_not_supported": _all(SKIPPED),
    "push_not_supported": _all(PASSED),
    "extended_card": _all(PASSED),
    "extension_required": _all(FAILED),
    "version_not_supported": {"jsonrpc": PASSED, "http+json": PASSED, "grpc": FAILED},
    "parse_error": {"jsonrpc": PASSED, "http+json": PASSED, "grpc": SKIPPED},
    "invalid_request": {"jsonrpc": PASSED, "http+json": SKIPPED, "grpc": SKIPPED},
    "method_not_found": {"jsonrpc": PASSED, "http+json": SKIPPED, "grpc": SKIPPED},
    "invalid_params": _all(PASSED),
    "resend_deduplicated": _all(FAILED),
}


PATIENCE = 120.0
"""The probe's budget against servers of ours: ample on a busy machine (a busy machine only
makes a probe slower, never a verdict different)."""


def _probe(url: str, **options: Any) -> ProbeReport:
    options.setdefault("timeout", PATIENCE)
    return probe(url, **options)


def _base(peer: EmbeddedPeer) -> str:
    return peer.card_url.rsplit("/.well-known", 1)[0]


def _outcomes(report: ProbeReport) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for result in report.checks:
        found.setdefault(result.check, {})[result.binding] = result.status.value
    return found


@pytest.fixture(scope="module")
def report(peer: EmbeddedPeer) -> ProbeReport:
    """One full probe of the streaming peer, shared by the tests that read it."""
    return _probe(_base(peer))


def test_every_outcome_on_a2a_sdk(report: ProbeReport) -> None:
    """Passes where a2a-sdk conforms, fails on its two gaps, skips what the card rules out."""
    assert _outcomes(report) == A2A_SDK_1_3
    assert [c.check for c in report.checks][:: len(BINDINGS)] == [c.name for c in CHECKS]
    assert report.exit_status == 1
    assert report.error is None
    assert [(i.binding, i.probed) for i in report.interfaces] == [
        ("jsonrpc", True),
        ("http+json", True),
        ("grpc", True),
    ]


def test_the_peer_follows_the_1_0_1_table(report: ProbeReport) -> None:
    """Where the tables differ, a2a-sdk's statuses are 1.0.1's; details arrive everywhere."""
    assert report.result("task_not_cancelable", "http+json").table == "1.0.1"
    assert report.result("push_not_supported", "grpc").table == "1.0.1"
    assert report.result("task_not_found", "grpc").table == "both"
    for result in report.checks:
        if result.status is CheckStatus.PASSED and result.expected and result.expected.reason:
            assert result.details_survived is True, result


def test_the_gaps_are_named(report: ProbeReport) -> None:
    """The report says why each failure failed, in words a reader can act on."""
    version = report.result("version_not_supported", "grpc")
    assert version.observed is not None
    assert version.observed.grpc_status == "NOT_FOUND"
    assert version.observed.reason == "TASK_NOT_FOUND"
    assert "the agent ignored A2A-Version: 99.0 and looked the task up" in version.notes
    assert version.table == "neither"
    extension = report.result("extension_required", "jsonrpc")
    assert extension.notes[0] == (
        "the call succeeded (a task in TASK_STATE_COMPLETED): the agent does not enforce the "
        "extensions its card marks required"
    )


def test_the_standard_jsonrpc_codes(report: ProbeReport) -> None:
    """-32700, -32600, -32601, -32602 come back as JSON-RPC defines them."""
    for check, code in (
        ("parse_error", -32700),
        ("invalid_request", -32600),
        ("method_not_found", -32601),
        ("invalid_params", -32602),
    ):
        observed = report.result(check, "jsonrpc").observed
        assert observed is not None
        assert observed.jsonrpc_code == code


def test_streaming_and_subscribe_refused_when_the_card_says_so(
    peer_no_streaming: EmbeddedPeer,
) -> None:
    """With streaming off, both streaming checks pass on every binding."""
    found = _probe(
        _base(peer_no_streaming), checks=["streaming_not_supported", "subscribe_not_supported"]
    )
    assert _outcomes(found) == {
        "streaming_not_supported": _all(PASSED),
        "subscribe_not_supported": _all(PASSED),
    }
    assert found.ok
    subscribe = found.result("subscribe_not_supported", "grpc")
    assert subscribe.notes[0].endswith("which came back in TASK_STATE_COMPLETED from SendMessage")


def test_the_card_url_and_filters(peer: EmbeddedPeer) -> None:
    """The card's own URL works; checks and bindings narrow what is sent."""
    found = _probe(peer.card_url, checks=["task_not_found"], bindings=["grpc", "jsonrpc"])
    assert _outcomes(found) == {"task_not_found": {"jsonrpc": PASSED, "grpc": PASSED}}
    assert found.ok
    assert found.interfaces[1].note == "binding not selected"


# --------------------------------------------------------------------------------------------
# The advisory check: a resent messageId
# --------------------------------------------------------------------------------------------

RESEND = "resend_deduplicated"


@pytest.fixture(scope="module")
def deduplicating() -> Iterator[EmbeddedPeer]:
    """A peer whose request handler is wrapped in `a2a_client_errors.server.deduplicate`."""
    with EmbeddedPeer(streaming=False, push_notifications=False, deduplicate=True) as running:
        yield running


def test_an_agent_with_deduplicate_passes_the_resend_check_on_every_binding(
    deduplicating: EmbeddedPeer,
) -> None:
    """One task per messageId on each binding; the card's promise is read, and it counts."""
    before = len(deduplicating.task_ids())
    found = _probe(_base(deduplicating), checks=[RESEND])
    assert _outcomes(found) == {RESEND: _all(PASSED)}
    assert len(deduplicating.task_ids()) == before + len(BINDINGS)
    assert found.agent is not None
    assert found.agent.deduplicate is not None
    assert found.agent.deduplicate.ttl == 24 * 3600
    for binding in BINDINGS:
        result = found.result(RESEND, binding)
        assert result.advisory is False  # the card promises it
        assert result.notes[0].startswith("the resend of messageId a2a-errors-probe-")
        assert " got the first task back: " in result.notes[0]
        assert result.notes[1] == (
            "the card advertises deduplication (urn:a2a-client-errors:ext:deduplicate:v1, "
            "ttl 86400 s)"
        )
    assert found.exit_status == 0
    assert "deduplication advertised (ttl 86400 s)" in found.to_text()


def test_a_plain_a2a_sdk_agent_fails_the_resend_check_but_exits_0(peer: EmbeddedPeer) -> None:
    """a2a-sdk alone makes two tasks for one messageId: failed, advisory, exit status 0."""
    before = len(peer.task_ids())
    found = _probe(_base(peer), checks=["task_not_found", RESEND])
    assert _outcomes(found) == {"task_not_found": _all(PASSED), RESEND: _all(FAILED)}
    assert len(peer.task_ids()) == before + 2 * len(BINDINGS)
    for binding in BINDINGS:
        result = found.result(RESEND, binding)
        assert result.advisory is True
        assert result.notes[0].startswith("two tasks for one messageId a2a-errors-probe-")
        assert result.notes[0].endswith("(the agent ran the message twice)")
    assert found.exit_status == 0
    assert found.ok
    assert found.to_text().splitlines()[-1] == (
        "result: 3 checks passed, 3 failed (3 advisory), 0 errors, 0 skipped (exit status 0)"
    )


def test_cli_json_carries_the_advisory_check(
    peer: EmbeddedPeer, deduplicating: EmbeddedPeer
) -> None:
    """--json: status and advisory per check, the summaries, the card's promise; exit 0."""
    for agent, status, advisory in ((peer, FAILED, True), (deduplicating, PASSED, False)):
        code, out = _cli(["probe", _base(agent), "--json", "--check", RESEND])
        assert code == 0
        report = json.loads(out)
        assert report["schema"] == "a2a-errors-probe/1"
        assert report["exit_status"] == 0
        assert [(c["binding"], c["status"], c["advisory"]) for c in report["checks"]] == [
            (binding, status, advisory) for binding in BINDINGS
        ]
        counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0, "inconclusive": 0, status: 3}
        none = dict.fromkeys(counts, 0)
        assert report["advisory_summary"] == (counts if advisory else none)
        assert report["summary"] == counts
        promised = report["agent"]["deduplicate"]
        assert promised == (
            None
            if advisory
            else {
                "extension": "urn:a2a-client-errors:ext:deduplicate:v1",
                "ttl": 86400.0,
                "per_caller": True,
            }
        )


# --------------------------------------------------------------------------------------------
# Behind a gateway
# --------------------------------------------------------------------------------------------


class Gateway(Proxy):
    """The test proxy as a gateway: it serves the card with its own URL, and says ``Via``."""

    async def _forward(self, request: Request) -> Response:
        answer = await super()._forward(request)
        body = bytes(answer.body)
        if request.url.path.endswith("agent-card.json"):
            body = body.replace(self.upstream.encode(), self.url.encode())
        return Response(
            body,
            status_code=answer.status_code,
            media_type=answer.media_type,
            headers={"Via": "1.1 a2a-test-gateway"},
        )


@pytest.fixture(scope="module")
def stripping(peer: EmbeddedPeer) -> Iterator[Gateway]:
    """A gateway in front of the peer that drops every error's details."""
    with Gateway(_base(peer), "strip") as gateway:
        yield gateway


@pytest.fixture(scope="module")
def bare(peer: EmbeddedPeer) -> Iterator[Gateway]:
    """A gateway in front of the peer that answers every error with its own 502 page."""
    with Gateway(_base(peer), "bare") as gateway:
        yield gateway


A2A_CHECKS = (
    "task_not_found",
    "task_not_cancelable",
    "push_not_supported",
    "extended_card",
    "version_not_supported",
)
STANDARD_CHECKS = ("parse_error", "invalid_request", "method_not_found", "invalid_params")


def test_a_gateway_that_strips_details_fails_the_probe(stripping: Gateway) -> None:
    """Every A2A error through the gateway fails as 'ErrorInfo missing', the gateway named."""
    found = _probe(stripping.url)
    assert found.exit_status == 1
    assert found.interfaces[0].url.startswith(stripping.url)
    for check in A2A_CHECKS:
        for binding in ("jsonrpc", "http+json"):
            result = found.result(check, binding)
            assert result.status is CheckStatus.FAILED, (check, binding)
            assert result.details_survived is False
            assert any(
                n.startswith("ErrorInfo missing: a hop stripped the details") for n in result.notes
            )
            assert "answered through: via '1.1 a2a-test-gateway'; server 'uvicorn'" in result.notes
        # gRPC does not go through the gateway: its answers keep their details.
        grpc = found.result(check, "grpc")
        assert grpc.status.value == A2A_SDK_1_3[check]["grpc"]
    # The codes and statuses survive, so the reason is still right by them where they name it.
    by_code = found.result("task_not_cancelable", "jsonrpc")
    assert "(the reason is right by its code only)" in by_code.notes[0]
    by_status = found.result("task_not_found", "http+json")
    assert "(the reason is right by its status only)" in by_status.notes[0]
    assert (
        "(its status names no reason)" in found.result("task_not_cancelable", "http+json").notes[0]
    )
    # The standard errors need no ErrorInfo: their codes crossed the gateway intact.
    for check in STANDARD_CHECKS:
        assert found.result(check, "jsonrpc").passed
    assert "LOST" in found.to_text()


def test_a_gateway_that_replaces_errors_is_inconclusive(bare: Gateway) -> None:
    """The gateway's 502 page instead of each error: only a hop answered, not judged.

    The agent's own successes still pass through and are judged: a2a-sdk does not enforce
    required extensions, a failure that stands (exit status 1).
    """
    found = _probe(bare.url, bindings=["jsonrpc", "http+json"])
    assert found.exit_status == 1
    assert found.result("extension_required", "jsonrpc").status is CheckStatus.FAILED
    judged = 0
    for check in (*A2A_CHECKS, *STANDARD_CHECKS):
        for binding in ("jsonrpc", "http+json"):
            try:
                result = found.result(check, binding)
            except KeyError:
                continue
            if result.status is CheckStatus.SKIPPED or check == "extension_required":
                continue
            judged += 1
            assert result.status is CheckStatus.INCONCLUSIVE, (check, binding)
            assert result.observed is not None
            assert result.observed.http_status == 502
            assert result.observed.wire == "bare_status"
    assert judged
    (note,) = found.result("task_not_found", "jsonrpc").notes
    assert "only a hop answered, 3 times" in note
    assert "a2a-test-gateway" in note


def test_a_card_naming_hosts_behind_the_gateway_probes_them_directly(peer: EmbeddedPeer) -> None:
    """A gateway that serves the agent's card as it is: interfaces are reached directly, said."""
    with Proxy(_base(peer), "strip") as plain:
        found = _probe(plain.url, checks=["task_not_found"])
    assert found.ok
    assert [i.note for i in found.interfaces] == [
        "another port of the host given: reached directly",
        "another port of the host given: reached directly",
        "reached directly: gRPC does not go through the URL given",
    ]


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------


def _cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_cli_exit_zero_when_every_check_that_ran_passed(
    peer: EmbeddedPeer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0, the table, and header values nowhere in the output."""
    code, out = _cli(
        [
            "probe",
            _base(peer),
            "-H",
            "Authorization: Bearer top-secret-token",
            "-H",
            "X-Api-Key:another-secret",
            "--check",
            "task_not_found",
            "--check",
            "invalid_params",
        ]
    )
    assert code == 0
    lines = out.splitlines()
    assert "headers sent: Authorization, X-Api-Key (values not shown)" in lines
    rows = [line.split() for line in lines if line.startswith(("task_not_found", "invalid_params"))]
    assert [row[:3] for row in rows] == [
        ["task_not_found", "jsonrpc", "pass"],
        ["task_not_found", "http+json", "pass"],
        ["task_not_found", "grpc", "pass"],
        ["invalid_params", "jsonrpc", "pass"],
        ["invalid_params", "http+json", "pass"],
        ["invalid_params", "grpc", "pass"],
    ]
    assert lines[-1] == "result: 6 checks passed, 0 failed, 0 errors, 0 skipped (exit status 0)"
    captured = capsys.readouterr()
    for secret in ("top-secret-token", "another-secret"):
        assert secret not in out
        assert secret not in captured.err


def test_cli_exit_one_and_json_when_a_check_fails(peer: EmbeddedPeer) -> None:
    """--json prints the report; a failed check gives exit 1; --binding narrows it."""
    code, out = _cli(
        ["probe", _base(peer), "--json", "--binding", "grpc", "--check", "version_not_supported"]
    )
    assert code == 1
    report = json.loads(out)
    assert report["schema"] == "a2a-errors-probe/1"
    assert report["exit_status"] == 1
    assert report["ok"] is False
    assert report["summary"] == {
        "passed": 0,
        "failed": 1,
        "skipped": 0,
        "error": 0,
        "inconclusive": 0,
    }
    [check] = report["checks"]
    assert (check["check"], check["binding"], check["status"]) == (
        "version_not_supported",
        "grpc",
        "failed",
    )
    assert check["observed"]["grpc_status"] == "NOT_FOUND"
    assert check["expected"]["grpc_status"] == ["FAILED_PRECONDITION", "UNIMPLEMENTED"]


def test_cli_exit_two_when_the_agent_is_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    """A URL nothing listens on: exit 2, and a clear message on stderr."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, out = _cli(["probe", f"http://127.0.0.1:{port}"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"a2a-errors probe: cannot read the agent card at http://127.0.0.1:{port}"
        "/.well-known/agent-card.json: connect:"
    )
    assert "result: 0 checks passed" in out


def test_cli_exit_two_for_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """A header without a colon, an unknown check, a non-http URL: exit 2, values not shown."""
    with pytest.raises(SystemExit) as raised:
        main(["probe", "http://127.0.0.1:9", "-H", "Authorization Bearer leaked"])
    assert raised.value.code == 2
    assert "leaked" not in capsys.readouterr().err
    with pytest.raises(SystemExit) as raised:
        main(["probe", "http://127.0.0.1:9", "--check", "nope"])
    assert raised.value.code == 2
    assert _cli(["probe", "ftp://127.0.0.1:9"])[0] == 2
    assert "http:// or https://" in capsys.readouterr().err
    assert _cli(["probe", "http://127.0.0.1:9", "-H", "A2A-Version: 2.0"])[0] == 2


def test_the_installed_command_runs(peer: EmbeddedPeer) -> None:
    """The command as a real process (python -m a2a_client_errors): the same exit status."""
    done = subprocess.run(  # noqa: S603 (our own command, a fixed argument list)
        [
            sys.executable,
            "-m",
            "a2a_client_errors",
            "probe",
            _base(peer),
            "--check",
            "task_not_found",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["passed"] == 3


@pytest.mark.parametrize("timeout", ["0", "-1", "abc", "inf"])
def test_cli_refuses_a_timeout_that_is_not_a_positive_number(
    timeout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--timeout takes positive seconds only."""
    with pytest.raises(SystemExit) as raised:
        main(["probe", "http://127.0.0.1:9", "--timeout", timeout])
    assert raised.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_a_grpc_stream_is_read_up_to_its_first_event(peer: EmbeddedPeer) -> None:
    """An agent that streams: the probe keeps the first event and cancels the rest."""
    import grpc

    from a2a_client_errors.probe._wire import Deadline, GrpcWire

    with grpc.insecure_channel(peer.grpc_target) as channel:
        wire = GrpcWire(channel, [("x-probe", "1")], None, Deadline.after(5.0))
        message = {"messageId": "probe-stream-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        answer = wire.call(
            "SendStreamingMessage",
            {"message": message},
            version="1.0",
            extensions=[peer.required_extension or ""],
        )
    assert answer.error is None
    assert isinstance(answer.payload, dict)
    assert answer.payload["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
