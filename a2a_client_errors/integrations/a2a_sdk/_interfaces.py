"""The interfaces of an agent a guarded client may call, and a client for each (failover).

An agent card often lists the same agent several times: JSON-RPC, HTTP+JSON and gRPC, or the
same binding at several URLs. `route_of` orders the ones a client may fail over to, the one it
was built for first (the *preferred* interface), and gives each its own peer key, so that each
has its own retry budget and circuit breaker: a dead JSON-RPC endpoint opens only its own
breaker.

Failover keeps credentials home. The client was built, with its credentials (an httpx
client's default headers, an auth interceptor), for the preferred interface; a card, which
whoever serves it controls, may list any URL. So only interfaces on the preferred interface's
own origin (`origin_of`: scheme, host and port) are failed over to, unless the caller names
another origin (``failover_origins``); and a call goes over at most ``max_interfaces``
interfaces (`MAX_INTERFACES`), the preferred one counted, whatever the card lists. The
interfaces left out are `LeftOut` records, logged once (INFO) when the route is drawn.
Nor does a redirect carry a call elsewhere: every client of a route, the wrapped one
included, refuses redirects to another origin (`keep_home`), whatever its httpx client's
``follow_redirects``.

`Route` builds a client for each other interface once, the way the first one was built (the
same ``ClientFactory`` configuration and interceptors), from a copy of the card that lists
only that interface, so that the factory cannot pick another.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast
from urllib.parse import urlsplit

import httpx

from a2a_client_errors._errors import safe_peer
from a2a_client_errors._redirects import refuse_redirects_of
from a2a_client_errors.integrations.a2a_sdk._answers import read_answers
from a2a_client_errors.integrations.a2a_sdk._compat import (
    CardInterface,
    UnsupportedSdkError,
    base_transport,
    client_binding,
    client_card,
    client_config,
    client_factory,
    http_clients,
    line,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "MAX_INTERFACES",
    "Interface",
    "LeftOut",
    "Route",
    "keep_home",
    "named_origins",
    "origin_of",
    "route_of",
]

_log = logging.getLogger("a2a_client_errors")

MAX_INTERFACES: Final = 3
"""The most interfaces one call goes over by default, the preferred one counted: a card listing
300 dead ones costs a call at most three connection attempts (and the retries the Guard's
policy makes over the last one), not 300."""
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_LISTED_IN_LOG: Final = 5
"""How many left-out interfaces a log line names (a card may list thousands)."""


def origin_of(url: str) -> str:
    """The origin of an interface's URL: who receives its requests, and their credentials.

    * A URL with a scheme and a host, read as httpx reads it: ``scheme://host:port``, the
      scheme and host lowercased (an international host in its IDNA form), the scheme's
      default port filled in (``https://Agent.example/a2a`` is ``https://agent.example:443``);
      user info, path and query play no part.
    * A target without a scheme, as cards write gRPC's (``127.0.0.1:50051``): ``host:port``.
      It is never the origin of an ``http`` or ``https`` URL on the same host and port: the
      scheme differs.
    * Anything else (``dns:///agent:50051``, ``unix:/run/agent.sock``, what cannot be read):
      the URL as written, so that it is the origin of that same URL only.

    Examples:
        >>> origin_of("https://user:secret@Agent.example/a2a?key=k")
        'https://agent.example:443'
        >>> origin_of("http://127.0.0.1:8000/jsonrpc") == origin_of("http://127.0.0.1:8000/rest")
        True
        >>> origin_of("127.0.0.1:50051")
        '127.0.0.1:50051'

    Args:
        url: an interface's URL as the card (or the caller) writes it.
    """
    text = url.strip()
    if "://" in text:
        try:  # httpx's reading: the one a2a-sdk's HTTP transports connect by
            parsed = httpx.URL(text)
        except (httpx.InvalidURL, TypeError, ValueError):
            return text
        host = parsed.raw_host.decode("ascii").lower()
        if not (parsed.scheme and host):
            return text
        port = parsed.port if parsed.port is not None else _DEFAULT_PORTS.get(parsed.scheme)
        return f"{parsed.scheme}://{_host_port(host, port)}"
    try:  # a target without a scheme: host and port only
        parts = urlsplit("//" + text)
        target, port = parts.hostname, parts.port
    except ValueError:  # a port out of range, a broken IPv6 literal: only itself
        return text
    if not target or parts.path or parts.query or parts.fragment or not _plain(target):
        return text
    return _host_port(target, port)


def _plain(host: str) -> bool:
    """Whether a host holds no space or control character (NEL among them): one to name."""
    return host.isprintable() and not any(ch.isspace() for ch in host)


def _host_port(host: str, port: int | None) -> str:
    """``host:port`` (an IPv6 host in brackets; no port when there is none)."""
    if ":" in host:
        host = f"[{host}]"
    return host if port is None else f"{host}:{port}"


def keep_home(client: Any) -> None:
    """Make ``client`` refuse every redirect to another origin (done twice, once).

    On each httpx client the a2a-sdk client sends with (`http_clients`), a response hook
    (`a2a_client_errors._redirects.refuse_redirects`): with ``follow_redirects=True``, a
    redirect on the request's own origin is followed as before, one to another origin is
    answered as the redirect itself (its ``Location`` taken out), which `normalize` reads as a
    ``fix_request`` naming where it pointed. The hook is the httpx client's from then on, for
    every request sent with it, guarded or not. A gRPC client has no httpx client to send
    with (but its configuration's, which card reads use).
    """
    for http in http_clients(client):
        refuse_redirects_of(http)


def named_origins(names: Iterable[str]) -> frozenset[str]:
    """The origins a caller allows failover to, each read as `origin_of` reads a URL.

    ``{"https://b.example"}`` allows every interface at ``https://b.example:443``;
    ``{"127.0.0.1:50051"}`` a gRPC interface the card lists at ``127.0.0.1:50051``.

    Args:
        names: origins or URLs (only their origin counts).

    Raises:
        TypeError: ``names`` is one string (a collection of them is meant), or holds
            something that is not a string.
        ValueError: a name is empty.
    """
    if isinstance(names, (str, bytes)):
        msg = "failover_origins takes a collection of origins, not one string"
        raise TypeError(msg)
    origins = set()
    for name in cast("Iterable[object]", names):  # a caller's, typed or not
        if not isinstance(name, str):
            msg = f"failover_origins holds strings, not {type(name).__name__}"
            raise TypeError(msg)
        origin = origin_of(name)
        if not origin:
            msg = "failover_origins holds an empty origin"
            raise ValueError(msg)
        origins.add(origin)
    return frozenset(origins)


@dataclass(frozen=True, slots=True)
class Interface:
    """One interface of the agent a guarded client may call.

    Attributes:
        binding: its protocol binding as the card names it (``"JSONRPC"``, ``"HTTP+JSON"``,
            ``"GRPC"``).
        url: where it is served.
        peer: its key, for its retry budget, circuit breaker, hooks and metrics.
        tenant: the tenant the card names for it, if any.
        protocol_version: the A2A version the card names for it, if any.

    """

    binding: str
    url: str
    peer: str
    tenant: str = ""
    protocol_version: str = ""

    def __str__(self) -> str:
        return f"{self.binding} {self.url}" if self.binding else self.url

    @property
    def origin(self) -> str:
        """Its origin (see `origin_of`)."""
        return origin_of(self.url)


@dataclass(frozen=True, slots=True)
class LeftOut:
    """An interface of the card a guarded client never calls, and why.

    Attributes:
        binding: its protocol binding as the card names it.
        url: where it is served.
        origin: its origin (`origin_of`): what ``failover_origins`` must name to allow it.
        why: ``"origin"`` (neither the preferred interface's origin nor one allowed) or
            ``"max_interfaces"`` (allowed, but the route already holds as many as a call may
            go over).

    """

    binding: str
    url: str
    origin: str
    why: str

    def __str__(self) -> str:
        return f"{self.binding} {self.url}" if self.binding else self.url


def _same_url(url: str) -> str:
    return url.rstrip("/")


def _preferred(client: Any, interfaces: Sequence[CardInterface]) -> CardInterface | None:
    """The card's interface the client was built for, or None when it cannot be told."""
    binding = client_binding(client)
    if not binding:
        return None
    url = getattr(base_transport(client), "url", None)
    if isinstance(url, str):
        candidates = [i for i in interfaces if i.binding == binding]
        matching = [i for i in candidates if _same_url(i.url) == _same_url(url)]
        return matching[0] if matching else None
    # gRPC keeps no URL: the interface the factory picks for the binding (the best version).
    return line().best_interface(client_card(client), binding)


def _checked_limit(limit: object) -> int:
    """``limit``, if it is a whole number of at least one."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        msg = f"max_interfaces must be a whole number of at least 1, not {limit!r}"
        raise ValueError(msg)
    return limit


def route_of(
    client: Any,
    peer: str | None,
    *,
    origins: Iterable[str] = (),
    limit: int = MAX_INTERFACES,
) -> tuple[Interface, ...]:
    """The interfaces ``client`` may call, the one it speaks first; each with its peer key.

    Only interfaces of a binding the client's configuration supports
    (``supported_protocol_bindings``; JSON-RPC when empty) are listed, each once; of those,
    only the ones on the preferred interface's origin or on one of ``origins``, and at most
    ``limit`` of them, the preferred counted, in the card's order. The preferred interface's
    key is ``peer`` when given, else its URL; the others' keys are their URLs, or ``peer``
    with their binding when ``peer`` is given (a number is added when two would be the same).
    A client whose interface cannot be told (not one of a2a-sdk's transports, no card) has a
    route of one: no failover.

    Args:
        client: the a2a-sdk client.
        peer: the preferred interface's key (default: its URL).
        origins: the other origins calls may go to (see `named_origins`).
        limit: the most interfaces listed, the preferred one counted.
    """
    return _split(client, peer, named_origins(origins), _checked_limit(limit))[0]


def _split(
    client: Any, peer: str | None, origins: frozenset[str], limit: int
) -> tuple[tuple[Interface, ...], tuple[LeftOut, ...]]:
    """The route (see `route_of`), and the interfaces it leaves out by origin or by limit."""
    sdk = line()
    listed = sdk.interfaces(client_card(client))
    first = _preferred(client, listed) if listed else None
    if first is None:
        url = listed[0].url if listed else ""
        return (Interface("", url, peer or url or "a2a"),), ()
    speaks = sdk.client_bindings(client_config(client))
    allowed = origins | {origin_of(first.url)}
    route: list[Interface] = []
    left_out: list[LeftOut] = []
    seen: set[tuple[str, str, str]] = set()
    taken: set[str] = set()
    for candidate in [first, *listed]:
        binding, url = candidate.binding, candidate.url
        where = (binding, _same_url(url), candidate.tenant)
        if where in seen or (candidate is not first and binding not in speaks):
            continue
        seen.add(where)
        if candidate is not first:
            origin = origin_of(url)
            why = "origin" if origin not in allowed else "max_interfaces"
            if why == "origin" or len(route) >= limit:
                left_out.append(LeftOut(binding, url, origin, why))
                continue
        key = _key(binding, url, peer, first=not route, taken=taken)
        taken.add(key)
        route.append(Interface(binding, url, key, candidate.tenant, candidate.protocol_version))
    return tuple(route), tuple(left_out)


def _key(binding: str, url: str, peer: str | None, *, first: bool, taken: set[str]) -> str:
    key = (peer or url or "a2a") if first else (f"{peer} [{binding}]" if peer else url)
    if key in taken and not peer:
        key = f"{url} [{binding}]"  # two bindings served at one URL
    base, number = key, 2
    while key in taken:
        key, number = f"{base} #{number}", number + 1
    return key


def _tell_left_out(preferred: Interface, left_out: Sequence[LeftOut], limit: int) -> None:
    """One INFO line per reason the route leaves interfaces out, naming the first few."""
    for why, rule in (
        ("origin", "not on its origin nor on one in failover_origins"),
        ("max_interfaces", f"beyond max_interfaces={limit}"),
    ):
        these = [interface for interface in left_out if interface.why == why]
        if not these:
            continue
        named = "; ".join(safe_peer(str(interface)) for interface in these[:_LISTED_IN_LOG])
        more = len(these) - _LISTED_IN_LOG
        _log.info(
            "calls to %s never go over %d of the agent card's interfaces (%s): %s%s",
            safe_peer(preferred.peer),
            len(these),
            rule,
            named,
            f"; and {more} more" if more > 0 else "",
        )


class Route:
    """The clients of a route: the wrapped one for the preferred interface, one per other.

    The others are built when a call first needs them (a call moving on, a look-up), with
    ``factory`` (default: an a2a-sdk ``ClientFactory`` with the wrapped client's configuration)
    and the wrapped client's interceptors; an interface no client can be built for is left
    out (logged once). ``left_out`` holds the card's interfaces the route never listed (other
    origins, beyond the limit: see `Route.of`).

    Args:
        client: the wrapped a2a-sdk client (the preferred interface's).
        interfaces: `route_of` the client.
        factory: what builds the other clients (``create(card, interceptors)``).
        left_out: the card's interfaces the route leaves out (see `Route.of`).

    """

    def __init__(
        self,
        client: Any,
        interfaces: Sequence[Interface],
        factory: Any = None,
        left_out: Sequence[LeftOut] = (),
    ) -> None:
        self.listed = tuple(interfaces)
        self.left_out = tuple(left_out)
        self.factory = factory
        self._clients: dict[int, Any] = {0: client}
        self._unbuildable: set[int] = set()

    @classmethod
    def of(
        cls,
        client: Any,
        peer: str | None,
        factory: Any = None,
        *,
        origins: frozenset[str] = frozenset(),
        limit: int = MAX_INTERFACES,
    ) -> Route:
        """The route of ``client`` (see `route_of`); the interfaces it leaves out are logged.

        Args:
            client: the wrapped a2a-sdk client.
            peer: the preferred interface's key (default: its URL).
            factory: what builds the other clients.
            origins: the other origins calls may go to, as `named_origins` reads them.
            limit: the most interfaces a call goes over, the preferred one counted.
        """
        limit = _checked_limit(limit)
        listed, left_out = _split(client, peer, origins, limit)
        if left_out:
            _tell_left_out(listed[0], left_out, limit)
        return cls(client, listed, factory, left_out)

    @property
    def preferred(self) -> Interface:
        """The interface the wrapped client speaks."""
        return self.listed[0]

    def has_after(self, index: int) -> bool:
        """Whether an interface after ``index`` may still serve (not known to be left out)."""
        return any(at not in self._unbuildable for at in range(index + 1, len(self.listed)))

    def client_at(self, index: int) -> Any:
        """The client of the interface at ``index``, built on first use; None if left out."""
        if index in self._clients:
            return self._clients[index]
        if index in self._unbuildable:
            return None
        built = self._build(self.listed[index])
        if built is None:
            self._unbuildable.add(index)
        else:
            self._clients[index] = built
        return built

    def next_after(self, index: int) -> int | None:
        """The index of the next interface after ``index`` with a client, built if need be."""
        for at in range(index + 1, len(self.listed)):
            if self.client_at(at) is not None:
                return at
        return None

    def built(self) -> list[Any]:
        """The clients built for the other interfaces so far (to close)."""
        return [client for at, client in sorted(self._clients.items()) if at]

    def _build(self, interface: Interface) -> Any:
        client = self._clients[0]
        try:
            factory = self.factory
            if factory is None:
                factory = self.factory = client_factory(client_config(client))
            sdk = line()
            card = sdk.single_interface_card(
                client_card(client),
                CardInterface(
                    interface.binding, interface.url, interface.tenant, interface.protocol_version
                ),
            )
            built = sdk.create(factory, card, client)
            keep_home(built)
            read_answers(built)  # the agent's bytes win over what a2a-sdk kept of them
            return built
        except UnsupportedSdkError:
            raise  # the installed a2a-sdk's fault, not this interface's: said as it is
        except Exception as exc:  # not one it can speak after all: left out of the route
            _log.warning(
                "no client for the agent's %s interface (%s); it is left out of the failover",
                interface.binding or "other",
                type(exc).__name__,
            )
            return None
