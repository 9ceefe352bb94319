"""``with_message_id``: a copy of a message under a crash-stable messageId, on both lines.

The copy carries the id given and everything else of the message; the message itself is never
changed. Two messages that differ only in their random ids give the same journal entry once
copied under one id (the same digest): what lets a restarted process's send be known again.
"""

from __future__ import annotations

from typing import Any

import pytest

from a2a_client_errors.integrations.a2a_sdk import with_message_id
from a2a_client_errors.journal import entry_for, message_id_for

STABLE = message_id_for("recipes/user-1/session-1", "echo:1")


def _message_1(message_id: str) -> Any:
    from a2a.types import Message, Part, Role

    message = Message(
        message_id=message_id, role=Role.ROLE_USER, parts=[Part(text="hello")], context_id="ctx"
    )
    message.metadata.update({"skill": "echo"})
    return message


def _message_03(message_id: str) -> Any:
    from a2a.types import Message, Part, Role, TextPart

    return Message(
        message_id=message_id,
        role=Role.user,
        parts=[Part(root=TextPart(text="hello"))],
        context_id="ctx",
        metadata={"skill": "echo"},
    )


@pytest.mark.a2a_sdk("1")
def test_a_protobuf_message_is_copied_under_the_id() -> None:
    """1.x: a new Message, the id given, every other field as it was; the original untouched."""
    original = _message_1("random-1")
    copy = with_message_id(original, STABLE)
    assert copy is not original
    assert copy.message_id == STABLE
    assert original.message_id == "random-1"
    assert copy.parts[0].text == "hello"
    assert copy.context_id == "ctx"
    assert copy.metadata["skill"] == "echo"
    copy.parts[0].text = "changed"  # a deep copy: nothing is shared with the original
    assert original.parts[0].text == "hello"


@pytest.mark.a2a_sdk("0.3")
def test_a_pydantic_message_is_copied_under_the_id() -> None:
    """0.3: a new Message, the id given, every other field as it was; the original untouched."""
    original = _message_03("random-1")
    copy = with_message_id(original, STABLE)
    assert copy is not original
    assert copy.message_id == STABLE
    assert original.message_id == "random-1"
    assert copy.parts == original.parts
    assert copy.context_id == "ctx"
    assert copy.metadata == {"skill": "echo"}


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(_message_1, marks=pytest.mark.a2a_sdk("1"), id="1.x"),
        pytest.param(_message_03, marks=pytest.mark.a2a_sdk("0.3"), id="0.3"),
    ],
)
def test_two_random_ids_give_one_journal_entry_once_copied(build: Any) -> None:
    """The same step built twice (two random ids) is one entry: the same id, the same digest."""
    first = entry_for(with_message_id(build("random-1"), STABLE), "http://agent.example")
    again = entry_for(with_message_id(build("random-2"), STABLE), "http://agent.example")
    assert first is not None
    assert first == again
    assert first.message_id == STABLE
    assert first.context_id == "ctx"


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(_message_1, marks=pytest.mark.a2a_sdk("1"), id="1.x"),
        pytest.param(_message_03, marks=pytest.mark.a2a_sdk("0.3"), id="0.3"),
    ],
)
def test_what_is_not_a_message_or_an_id_is_refused(build: Any) -> None:
    """Not the line's Message (a dict, a request), an empty id, an id that is not a string."""
    with pytest.raises(TypeError, match="not an a2a-sdk"):
        with_message_id({"messageId": "x", "role": "user", "parts": []}, STABLE)
    with pytest.raises(ValueError, match="empty"):
        with_message_id(build("random-1"), "")
    with pytest.raises(TypeError, match="string"):
        with_message_id(build("random-1"), 42)


@pytest.mark.a2a_sdk("1")
def test_a_send_request_is_not_a_message() -> None:
    """1.x: the SendMessageRequest around a message is refused (give its ``message``)."""
    from a2a.types import SendMessageRequest

    request = SendMessageRequest(message=_message_1("random-1"))
    with pytest.raises(TypeError, match="SendMessageRequest"):
        with_message_id(request, STABLE)
    assert with_message_id(request.message, STABLE).message_id == STABLE
