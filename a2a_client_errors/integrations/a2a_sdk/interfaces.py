"""The interfaces of an agent a guarded client may call, and a client for each (failover).

An agent card often lists the same agent several times: JSON-RPC, HTTP+JSON and gRPC, or the
same binding at several URLs. `route_of` orders the ones a client can speak, the one it was
built for first (the *preferred* interface), and gives each its own peer key, so that each has
its own retry budget and circuit breaker: a dead JSON-RPC endpoint opens only its own breaker.

`Route` builds a client for each other interface once, the way the first one was built (the
same ``ClientFactory`` configuration and interceptors), from a copy of the card that lists
only that interface, so that the factory cannot pick another.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Interface", "Route", "route_of"]

_log = logging.getLogger("a2a_client_errors")

JSONRPC: Final = "JSONRPC"
_TRANSPORT_BINDINGS: Final = {
    "JsonRpcTransport": JSONRPC,
    "CompatJsonRpcTransport": JSONRPC,
    "RestTransport": "HTTP+JSON",
    "CompatRestTransport": "HTTP+JSON",
    "GrpcTransport": "GRPC",
    "CompatGrpcTransport": "GRPC",
}
"""The binding each of a2a-sdk's client transports speaks, by class name (subclasses too)."""


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


def _same_url(url: str) -> str:
    return url.rstrip("/")


def _binding_of(transport: Any) -> str:
    """The binding an a2a-sdk transport speaks ("" when it is none of a2a-sdk's)."""
    base = getattr(transport, "_base", transport)  # under a tenant decorator
    for kind in type(base).__mro__:
        binding = _TRANSPORT_BINDINGS.get(kind.__name__)
        if binding is not None and kind.__module__.startswith("a2a."):
            return binding
    return ""


def _preferred(client: Any, interfaces: Sequence[Any]) -> Any:
    """The card's interface the client was built for, or None when it cannot be told."""
    transport = getattr(client, "_transport", None)
    binding = _binding_of(transport)
    if not binding:
        return None
    candidates = [i for i in interfaces if i.protocol_binding == binding]
    url = getattr(getattr(transport, "_base", transport), "url", None)
    if isinstance(url, str):
        matching = [i for i in candidates if _same_url(i.url) == _same_url(url)]
        return matching[0] if matching else None
    # gRPC keeps no URL: the interface the factory picks for the binding (the best version).
    try:
        from a2a.client import ClientFactory  # noqa: PLC0415 (the extra is installed here)

        return ClientFactory._find_best_interface(list(interfaces), protocol_bindings=[binding])
    except Exception:  # an a2a-sdk without it: the binding's first interface
        return candidates[0] if candidates else None


def route_of(client: Any, peer: str | None) -> tuple[Interface, ...]:
    """The interfaces ``client`` may call, the one it speaks first; each with its peer key.

    The preferred interface's key is ``peer`` when given, else its URL; the others' keys are
    their URLs, or ``peer`` with their binding when ``peer`` is given (a number is added when
    two would be the same). Only interfaces of a binding the client's configuration supports
    (``supported_protocol_bindings``; JSON-RPC when empty) are listed, each once.
    A client whose interface cannot be told (not one of a2a-sdk's transports, no card) has a
    route of one: no failover.
    """
    card = getattr(client, "_card", None)
    listed = list(getattr(card, "supported_interfaces", ()) or ())
    first = _preferred(client, listed) if listed else None
    if first is None:
        url = str(getattr(listed[0], "url", "")) if listed else ""
        return (Interface("", url, peer or url or "a2a"),)
    config = getattr(client, "_config", None)
    speaks = set(getattr(config, "supported_protocol_bindings", None) or ()) or {JSONRPC}
    route: list[Interface] = []
    seen: set[tuple[str, str, str]] = set()
    for proto in [first, *listed]:
        binding, url = proto.protocol_binding, proto.url
        where = (binding, _same_url(url), proto.tenant)
        if where in seen or (proto is not first and binding not in speaks):
            continue
        seen.add(where)
        key = _key(binding, url, peer, first=not route, taken={i.peer for i in route})
        route.append(Interface(binding, url, key, proto.tenant, proto.protocol_version))
    return tuple(route)


def _key(binding: str, url: str, peer: str | None, *, first: bool, taken: set[str]) -> str:
    key = (peer or url or "a2a") if first else (f"{peer} [{binding}]" if peer else url)
    if key in taken and not peer:
        key = f"{url} [{binding}]"  # two bindings served at one URL
    base, number = key, 2
    while key in taken:
        key, number = f"{base} #{number}", number + 1
    return key


class Route:
    """The clients of a route: the wrapped one for the preferred interface, one per other.

    The others are built when a call first needs them (a call moving on, a look-up), with
    ``factory`` (default: an a2a-sdk ``ClientFactory`` with the wrapped client's configuration)
    and the wrapped client's interceptors; an interface no client can be built for is left
    out (logged once).

    Args:
        client: the wrapped a2a-sdk client (the preferred interface's).
        interfaces: `route_of` the client.
        factory: what builds the other clients (``create(card, interceptors)``).

    """

    def __init__(self, client: Any, interfaces: Sequence[Interface], factory: Any = None) -> None:
        self.listed = tuple(interfaces)
        self.factory = factory
        self._clients: dict[int, Any] = {0: client}
        self._left_out: set[int] = set()

    @property
    def preferred(self) -> Interface:
        """The interface the wrapped client speaks."""
        return self.listed[0]

    def has_after(self, index: int) -> bool:
        """Whether an interface after ``index`` may still serve (not known to be left out)."""
        return any(at not in self._left_out for at in range(index + 1, len(self.listed)))

    def client_at(self, index: int) -> Any:
        """The client of the interface at ``index``, built on first use; None if left out."""
        if index in self._clients:
            return self._clients[index]
        if index in self._left_out:
            return None
        built = self._build(self.listed[index])
        if built is None:
            self._left_out.add(index)
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
            from a2a.client import ClientFactory  # noqa: PLC0415 (the extra is installed here)
            from a2a.types import AgentCard, AgentInterface  # noqa: PLC0415

            factory = self.factory
            if factory is None:
                factory = self.factory = ClientFactory(client._config)
            card = AgentCard()
            card.CopyFrom(client._card)
            del card.supported_interfaces[:]
            card.supported_interfaces.append(
                AgentInterface(
                    url=interface.url,
                    protocol_binding=interface.binding,
                    protocol_version=interface.protocol_version,
                    tenant=interface.tenant,
                )
            )
            return factory.create(card, list(getattr(client, "_interceptors", None) or ()))
        except Exception as exc:  # not one it can speak after all: left out of the route
            _log.warning(
                "no client for the agent's %s interface (%s); it is left out of the failover",
                interface.binding or "other",
                type(exc).__name__,
            )
            return None
