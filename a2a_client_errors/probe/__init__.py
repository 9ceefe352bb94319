"""The error-path conformance probe: each A2A error, checked through every hop.

`probe` reads an agent's card, and on each interface the card lists (JSON-RPC, HTTP+JSON,
gRPC) triggers the errors it can trigger deterministically: an unknown task, a cancel of a
terminal task, streaming or a subscription when the card says no streaming, a push config when
the card says no push notifications, the extended card, a missing required extension,
``A2A-Version: 99.0``, and malformed requests; and, as an advisory check, whether a resent
messageId gets the first task back. For each error it reads what came back with
`normalize` and compares the JSON-RPC code, the HTTP or gRPC status, the ErrorInfo reason and
domain with the spec's tables (A2A 1.0.1, and 1.0.0 where they differ)::

    report = probe("https://agent.example.com", headers={"Authorization": "Bearer ..."})
    assert report.ok, report.to_text()

What it cannot trigger it skips and says why ("skipped: the card says streaming is
supported"); it never reports a pass it did not see. An error whose reason is right by its code
or status only, without a ``google.rpc.ErrorInfo``, fails: a hop stripped the details, or the
agent does not send them. ``Via`` and ``Server`` headers name the hops that answered.

Where it sends requests:

* the card at the URL given (a card URL, or a base URL whose
  ``/.well-known/agent-card.json`` is read; for a base URL with a path, the origin's well-known
  path is tried when that one is missing);
* the interfaces the card lists on the host of that URL (any port: gRPC usually listens on a
  port of its own). Interfaces on other hosts are reported as skipped, and probed only with
  ``follow_card_hosts=True``: the headers given (credentials) go nowhere else unasked.

Requests with side effects, and only these: ``task_not_cancelable``, ``subscribe_not_supported``
and ``push_not_supported`` send one message (SendMessage, ``message`` text) per interface to get
a terminal task; ``extension_required`` sends one message without the required extension, and
``streaming_not_supported`` one streaming message; ``invalid_params`` sends a message without
its required fields; ``resend_deduplicated`` sends one message twice with the same messageId.
Leave them out with ``checks=`` when the agent must not see them.

Advisory checks (`CheckSpec.advisory`: ``resend_deduplicated``, since the spec makes
deduplication optional) are reported like the others, but their failure never makes the exit
status 1. A card that advertises deduplication (the ``urn:a2a-client-errors:ext:deduplicate:v1``
extension, `AgentSummary.deduplicate`) promises it: there the check counts, and a resend that
runs again is reported as a contradiction.

The JSON report (`ProbeReport.to_json`, ``a2a-errors probe --json``) has a stable schema,
``"schema": "a2a-errors-probe/1"``; see the README.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

import httpx

from a2a_client_errors import normalize
from a2a_client_errors.probe._checks import run_check
from a2a_client_errors.probe._expect import CHECKS, SPECS, TABLES, CheckSpec
from a2a_client_errors.probe._report import (
    BINDINGS,
    GRPC,
    SCHEMA,
    AgentSummary,
    CheckResult,
    CheckStatus,
    Expected,
    InterfaceResult,
    Observed,
    ProbeReport,
    capped,
)
from a2a_client_errors.probe._session import Options, Session
from a2a_client_errors.probe._wire import (
    MAX_BODY,
    Deadline,
    Interface,
    WireContext,
    hops_of,
    hops_text,
    interfaces_of,
    read_capped,
    summary_of,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "BINDINGS",
    "CHECKS",
    "DEFAULT_MESSAGE",
    "SCHEMA",
    "TABLES",
    "AgentSummary",
    "CheckResult",
    "CheckSpec",
    "CheckStatus",
    "Expected",
    "InterfaceResult",
    "Observed",
    "ProbeReport",
    "probe",
]

DEFAULT_MESSAGE: Final = "a2a-errors probe: a test message, please ignore"
"""The text of the messages the probe sends (to get a terminal task, and the like)."""

CARD_PATH: Final = "/.well-known/agent-card.json"
_OWN_HEADERS: Final = frozenset({"a2a-version", "a2a-extensions", "content-type"})
_USER_AGENT: Final = ("User-Agent", "a2a-errors-probe")
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE: Final = re.compile(r"[\x20-\x7e\t]*")


def _host_of(url: str) -> str | None:
    """The host of a URL, or of a gRPC target (``host:port``, ``dns:///host:port``)."""
    text = url.strip()
    if text.startswith("dns:"):
        text = text[len("dns:") :].lstrip("/")
    if "://" not in text:
        text = "//" + text
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    return host.lower() if host else None


def _public(url: str) -> str:
    """The URL without credentials in it, for reports."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


# --------------------------------------------------------------------------------------------
# The probe
# --------------------------------------------------------------------------------------------


def _card_urls(url: str) -> list[str]:
    parts = urlsplit(url)
    path = parts.path
    if path.endswith(".json") or "/.well-known/" in path:
        return [url]
    base = urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))
    urls = [base + CARD_PATH]
    if path.strip("/"):
        urls.append(urlunsplit((parts.scheme, parts.netloc, CARD_PATH, "", "")))
    return urls


def _fetch(
    client: httpx.Client, card_url: str, deadline: Deadline
) -> tuple[int, httpx.Headers, bytes] | str:
    """(status, headers, body up to the cap and one byte) of the card, or why there is none."""
    try:
        with client.stream(
            "GET", card_url, headers={"Accept": "application/json"}, timeout=deadline.left()
        ) as response:
            return response.status_code, response.headers, read_capped(response, deadline)
    except Exception as exc:  # unreachable, TLS, a broken URL: the probe cannot run
        error = normalize(exc)
        kind = error.transport.value if error and error.transport else type(exc).__name__
        detail = capped(error.message if error else str(exc))
        return f"cannot read the agent card at {_public(card_url)}: {kind}: {detail}"


def _card(
    card_url: str, fetched: tuple[int, httpx.Headers, bytes] | str, missing: str
) -> tuple[str, dict[str, Any]] | str:
    """The card read at ``card_url``, or why it cannot be used."""
    if isinstance(fetched, str):
        return fetched
    status, headers, body = fetched
    where = _public(card_url)
    hops = hops_of(headers)
    through = f" (answered through: {hops_text(hops)})" if hops else ""
    if 300 <= status < 400:
        location = _public(headers.get("location", "")) or "nowhere"
        return f"the agent card at {where} redirects (HTTP {status}) to {location}: probe that URL"
    if status != 200:
        content = headers.get("content-type", "no content type")
        prior = f" ({missing})" if missing else ""
        return f"cannot read the agent card at {where}: HTTP {status} {content}{through}{prior}"
    if len(body) > MAX_BODY:
        return f"the agent card at {where} is larger than {MAX_BODY} bytes"
    try:
        card = json.loads(body)
    except (ValueError, RecursionError):
        return f"the agent card at {where} is not JSON{through}"
    if not isinstance(card, dict):
        return f"the agent card at {where} is not a JSON object"
    return card_url, card


def _read_card(
    client: httpx.Client, url: str, deadline: Deadline
) -> tuple[str, dict[str, Any]] | str:
    """The card and where it was read, or why it could not be read.

    A base URL with a path whose well-known card is missing (404) falls back to the origin's.
    """
    *first, last = _card_urls(url)
    missing = ""
    for card_url in first:
        fetched = _fetch(client, card_url, deadline)
        if not (isinstance(fetched, tuple) and fetched[0] == 404):
            return _card(card_url, fetched, "")
        missing = f"HTTP 404 at {_public(card_url)}"
    return _card(last, _fetch(client, last, deadline), missing)


def _validated(
    checks: Iterable[str] | None, bindings: Iterable[str] | None, strict_table: str | None
) -> tuple[list[str], list[str]]:
    chosen = list(SPECS) if checks is None else list(dict.fromkeys(checks))
    unknown = [name for name in chosen if name not in SPECS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; known: {', '.join(SPECS)}")
    wanted = list(BINDINGS) if bindings is None else list(dict.fromkeys(bindings))
    bad = [name for name in wanted if name not in BINDINGS]
    if bad:
        raise ValueError(f"unknown binding(s) {bad}; known: {', '.join(BINDINGS)}")
    if strict_table not in (None, *TABLES):
        raise ValueError(f"strict_table must be one of {TABLES} or None")
    order = {name: index for index, name in enumerate(SPECS)}
    return sorted(chosen, key=order.__getitem__), wanted


def _header_items(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items = list(headers.items()) if hasattr(headers, "items") else list(headers)
    out: list[tuple[str, str]] = []
    for raw_name, value in items:
        if not isinstance(raw_name, str) or not isinstance(value, str):
            raise ValueError("headers must be names and values, both strings")
        name = raw_name.strip()
        if not _TOKEN.fullmatch(name):
            raise ValueError("a header name must be a token (RFC 9110): letters, digits, -_.")
        if not _FIELD_VALUE.fullmatch(value):
            # Never the value itself in the message: it is likely a credential.
            raise ValueError(f"the value of header {name} must be printable ASCII (not shown)")
        if name.lower() in _OWN_HEADERS:
            raise ValueError(f"the probe sets {name} itself; leave it out of headers")
        out.append((name, value))
    return out


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ValueError("the URL must be an http:// or https:// URL with a host")


def probe(
    url: str,
    *,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    timeout: float = 10.0,
    checks: Iterable[str] | None = None,
    bindings: Iterable[str] | None = None,
    strict_table: str | None = None,
    follow_card_hosts: bool = False,
    message: str = DEFAULT_MESSAGE,
    transport: httpx.BaseTransport | None = None,
) -> ProbeReport:
    """Trigger every error the agent at ``url`` can give deterministically, on every interface.

    Args:
        url: the agent's base URL, or its card's URL.
        headers: headers sent with every request (as gRPC metadata too), e.g. credentials.
            Their values never appear in the report.
        timeout: seconds the whole probe may take: every request, and every body and stream
            read, ends by then (a peer that trickles bytes cannot stretch it); what is left
            unsent when it passes is reported as not answered.
        checks: the names of the checks to run (see `CHECKS`); all by default.
        bindings: the bindings to probe (``jsonrpc``, ``http+json``, ``grpc``); all by
            default.
        strict_table: ``"1.0.1"`` or ``"1.0.0"`` to accept only that table's statuses; by
            default a status of either table passes (the report says which it follows).
        follow_card_hosts: also probe interfaces the card lists on other hosts.
        message: the text of the messages the probe sends.
        transport: the httpx transport for HTTP requests (TLS settings, or a
            ``httpx.MockTransport`` in tests).

    Returns:
        The report; `ProbeReport.ok` for CI, `ProbeReport.to_text` and `ProbeReport.to_json`
        to show it. A card that cannot be read gives a report with ``error`` set (exit
        status 2), never an exception.

    Raises:
        ValueError: for a URL that is not http(s), an unknown check or binding, or headers
            the probe sets itself (A2A-Version, A2A-Extensions, Content-Type).

    """
    _check_url(url)
    chosen, wanted = _validated(checks, bindings, strict_table)
    items = _header_items(headers)
    if not timeout > 0:
        raise ValueError("timeout must be positive")
    deadline = Deadline.after(timeout)
    names = tuple(dict.fromkeys(name for name, _ in items))
    base = ProbeReport(_public(url), headers_sent=names, strict_table=strict_table)
    options = Options(deadline, strict_table, message)
    plan = _Plan(options, chosen, wanted, follow_card_hosts=follow_card_hosts, items=items)
    with _client(transport, timeout, names, items) as client:
        return _probe_card(client, url, base, plan)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a probe was asked for, besides the URL: what every session shares, what to check."""

    options: Options
    chosen: Sequence[str]
    """The checks to run."""
    wanted: Sequence[str]
    """The bindings to probe."""
    follow_card_hosts: bool
    items: Sequence[tuple[str, str]]
    """The headers sent with every request (as gRPC metadata too)."""


def _client(
    transport: httpx.BaseTransport | None,
    timeout: float,
    names: Sequence[str],
    items: Sequence[tuple[str, str]],
) -> httpx.Client:
    """The probe's HTTP client: the caller's headers, our User-Agent unless they set one."""
    return httpx.Client(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        headers=[
            *([] if any(n.lower() == "user-agent" for n in names) else [_USER_AGENT]),
            *items,
        ],
    )


def _probe_card(client: httpx.Client, url: str, base: ProbeReport, plan: _Plan) -> ProbeReport:
    """Read the agent's card, probe the interfaces it lists, and report on them."""
    found = _read_card(client, url, plan.options.deadline)
    if isinstance(found, str):
        return replace(base, error=found)
    card_url, card = found
    agent = summary_of(card)
    base = replace(base, card_url=_public(card_url), agent=agent)
    declared = interfaces_of(card)
    if not declared:
        return replace(base, error="the agent card lists no interfaces (supportedInterfaces)")
    interfaces, results = _probe_interfaces(
        client,
        url,
        declared,
        agent,
        options=plan.options,
        chosen=plan.chosen,
        wanted=plan.wanted,
        follow_card_hosts=plan.follow_card_hosts,
        items=plan.items,
    )
    report = replace(base, interfaces=tuple(interfaces), checks=tuple(results))
    if not results or all(r.status is CheckStatus.SKIPPED for r in results):
        why = "no interface was probed" if not results else "every check was skipped"
        report = replace(report, error=f"no check could run: {why} (see the interfaces)")
    return report


def _probe_interfaces(
    client: httpx.Client,
    url: str,
    declared: Sequence[Interface],
    agent: AgentSummary,
    *,
    options: Options,
    chosen: Sequence[str],
    wanted: Sequence[str],
    follow_card_hosts: bool,
    items: Sequence[tuple[str, str]],
) -> tuple[list[InterfaceResult], list[CheckResult]]:
    host = _host_of(url)
    given = urlsplit(url)
    interfaces: list[InterfaceResult] = []
    per_check: list[tuple[int, int, CheckResult]] = []
    for position, interface in enumerate(declared):
        skip = _why_not(interface, wanted, host, follow_card_hosts)
        if skip:
            interfaces.append(_interface_result(interface, probed=False, note=skip))
            continue
        note = ""
        where = _host_of(interface.url)
        if where != host:
            note = "on another host; follow_card_hosts is set"
        elif interface.binding != GRPC and urlsplit(interface.url).netloc != given.netloc:
            note = "another port of the host given: reached directly"
        elif interface.binding == GRPC:
            note = "reached directly: gRPC does not go through the URL given"
        with WireContext(client, interface, given.scheme, items, options.deadline) as opened:
            wire, why = opened
            if wire is None:
                interfaces.append(_interface_result(interface, probed=False, note=why))
                continue
            interfaces.append(_interface_result(interface, probed=True, note=note))
            session = Session(interface, wire, agent, options)
            for index, check in enumerate(chosen):
                per_check.append((index, position, run_check(session, check)))
    per_check.sort(key=lambda item: (item[0], item[1]))
    return interfaces, [result for _, _, result in per_check]


NO_VERSION_NOTE: Final = (
    "the card gives no protocolVersion: the agent likely speaks an older A2A (0.3); "
    "the probe sends A2A-Version 1.0"
)


def _interface_result(interface: Interface, *, probed: bool, note: str) -> InterfaceResult:
    if not interface.version and interface.binding in BINDINGS:
        note = f"{note}; {NO_VERSION_NOTE}" if note else NO_VERSION_NOTE
    return InterfaceResult(
        interface.binding,
        _public(interface.url),
        interface.version,
        interface.tenant,
        probed,
        note,
    )


def _why_not(interface: Interface, wanted: Sequence[str], host: str | None, follow: bool) -> str:
    if interface.binding not in BINDINGS:
        return f"a binding the probe does not speak ({interface.binding})"
    if interface.binding not in wanted:
        return "binding not selected"
    version = interface.version or "1.0"
    if not version.startswith("1."):
        return f"A2A {version}; the probe checks A2A 1.x interfaces"
    where = _host_of(interface.url)
    if where is None:
        return "the card gives no host for it"
    if where != host and not follow:
        return (
            f"on another host ({where}) than the URL given; pass "
            "--follow-card-hosts (follow_card_hosts=True) to probe it"
        )
    if interface.binding != GRPC:
        scheme = urlsplit(interface.url).scheme
        if scheme not in ("http", "https"):
            return f"not an http(s) URL ({scheme or 'no scheme'})"
    return ""
