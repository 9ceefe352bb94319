"""The card reader of `a2a_client_errors._card_claims` on a2a-sdk 1.x's own ``AgentCard``.

The core reads it duck-typed (it never imports a2a-sdk). The 0.3 line: ``tests/sdk03``.
"""

from __future__ import annotations

import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import Guard
from a2a_client_errors._card_claims import CardClaims, card_interfaces, read_card_claims

pytestmark = pytest.mark.a2a_sdk("1")  # a2a-sdk 1.x protobuf cards (0.3: tests/sdk03)


def _card(**capabilities: bool) -> a2a_pb2.AgentCard:
    interface = a2a_pb2.AgentInterface(url="http://h:1/rpc/", protocol_binding="JSONRPC")
    return a2a_pb2.AgentCard(
        name="a",
        supported_interfaces=[interface],
        capabilities=a2a_pb2.AgentCapabilities(**capabilities),
    )


def test_a_1x_card_object_is_read() -> None:
    """``capabilities.streaming``, ``push_notifications``, ``extended_agent_card``; interfaces."""
    card = _card(streaming=True, extended_agent_card=True)
    assert read_card_claims(card) == CardClaims(streaming=True, extended_card=True)
    assert card_interfaces(card) == ["http://h:1/rpc/"]


def test_a_1x_card_object_is_read_flag_by_flag() -> None:
    """a2a-sdk 1.x's protobuf ``AgentCard``: every combination of the three flags."""
    for bits in range(8):
        card = _card(
            streaming=bool(bits & 1),
            push_notifications=bool(bits & 2),
            extended_agent_card=bool(bits & 4),
        )
        assert read_card_claims(card) == CardClaims(
            streaming=bool(bits & 1),
            push_notifications=bool(bits & 2),
            extended_card=bool(bits & 4),
        )


def test_a_card_without_capabilities_says_nothing_is_supported() -> None:
    """A protobuf message always has its capabilities (empty): nothing is offered."""
    assert read_card_claims(a2a_pb2.AgentCard(name="bare")) == CardClaims()


def test_guard_learns_a_1x_card_object_per_interface() -> None:
    """`Guard.learn_card` with the object: kept under its interface's key."""
    guard = Guard()
    guard.learn_card(_card(push_notifications=True))
    assert guard.card_claims("http://h:1/rpc") == CardClaims(push_notifications=True)
