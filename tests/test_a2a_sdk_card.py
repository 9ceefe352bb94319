"""The guarded a2a-sdk client's view of the agent card: where it is read again, and when not."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client


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
            "https://agent.example:8443/.well-known/agent-card.json",
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
    """GRPC targets have no card URL; the first HTTP(S) interface's origin gives it."""
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
