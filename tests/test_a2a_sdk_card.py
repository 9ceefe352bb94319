"""The guarded a2a-sdk client's view of the agent card: where it is read again, and when not."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client

# guard_client over a2a-sdk 1.x clients and types.
pytestmark = pytest.mark.a2a_sdk("1")


class Inner:
    """An a2a-sdk client stand-in: a card and nothing else."""

    def __init__(self, card: Any) -> None:
        self._card = card


def _card(*urls: str) -> a2a_pb2.AgentCard:
    card = a2a_pb2.AgentCard(name="peer")
    for url in urls:
        card.supported_interfaces.add(url=url, protocol_version="1.0")
    return card


@pytest.mark.parametrize(
    ("urls", "card_url"),
    [
        (
            ("https://agent.example:8443/a2a/jsonrpc?x=1",),
            "https://agent.example:8443/a2a/.well-known/agent-card.json",
        ),
        (
            ("127.0.0.1:50051", "http://127.0.0.1:8000/rest"),
            "http://127.0.0.1:8000/.well-known/agent-card.json",
        ),
        (("127.0.0.1:50051",), ""),
        ((), ""),
    ],
)
def test_the_card_url_is_the_well_known_path_of_the_first_http_interface(
    urls: tuple[str, ...], card_url: str
) -> None:
    """GRPC targets have no card URL; the first HTTP(S) interface gives it, under its prefix."""
    client = guard_client(Inner(_card(*urls)), Guard())
    assert client.card_url == card_url


def test_a_card_url_given_wins() -> None:
    """``card_url=`` is where the card is read, whatever the interfaces say."""
    client = guard_client(Inner(_card("http://a/x")), Guard(), card_url="http://b/card.json")
    assert client.card_url == "http://b/card.json"


async def test_without_a_card_url_the_held_card_is_kept() -> None:
    """Nowhere to read the card from: read_card gives the card held, and sends nothing."""
    card = _card("127.0.0.1:50051")
    client = guard_client(Inner(card), Guard())
    assert await client.read_card() is card
    assert client.card is card


class Configured(Inner):
    """A client stand-in with a config holding its httpx client."""

    def __init__(self, card: Any, http: httpx.AsyncClient) -> None:
        super().__init__(card)
        self._config = type("Config", (), {"httpx_client": http})()


def _card_json(version: str) -> dict[str, Any]:
    card = _card("https://agent.example/a/jsonrpc")
    card.supported_interfaces[0].protocol_version = version
    card.version, card.description = "1", "an agent"
    from google.protobuf import json_format

    return json_format.MessageToDict(card)


async def test_the_card_is_read_again_where_it_came_from_under_its_prefix() -> None:
    """An agent under /a serves its card there: read there first, not at the site root."""
    asked: list[str] = []

    def agent(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        if request.url.path == "/a/.well-known/agent-card.json":
            return httpx.Response(200, json=_card_json("2.0"))
        return httpx.Response(404)

    async with httpx.AsyncClient(transport=httpx.MockTransport(agent)) as http:
        client = guard_client(Configured(_card("https://agent.example/a/jsonrpc"), http), Guard())
        card = await client.read_card()
    assert asked == ["/a/.well-known/agent-card.json"]
    assert card.supported_interfaces[0].protocol_version == "2.0"


async def test_a_card_missing_under_the_prefix_is_read_at_the_origin() -> None:
    """Nothing under the prefix: the site root's well-known path, then the card held."""
    asked: list[str] = []

    def agent(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        if request.url.path == "/.well-known/agent-card.json":
            return httpx.Response(200, json=_card_json("2.0"))
        return httpx.Response(404)

    async with httpx.AsyncClient(transport=httpx.MockTransport(agent)) as http:
        client = guard_client(Configured(_card("https://agent.example/a/jsonrpc"), http), Guard())
        card = await client.read_card()
    assert asked == ["/a/.well-known/agent-card.json", "/.well-known/agent-card.json"]
    assert card.supported_interfaces[0].protocol_version == "2.0"
