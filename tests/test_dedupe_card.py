"""`read_dedupe_params` and `read_dedupe_mark`: what a card advertises, what an answer says."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from a2a.compat.v0_3.conversions import to_compat_agent_card, to_compat_message, to_compat_task
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    Message,
    Role,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors._dedupe_card import (
    DEDUPLICATE_EXTENSION,
    DedupeParams,
    read_dedupe_mark,
    read_dedupe_params,
)
from a2a_client_errors.server import dedupe_extension

# a2a-sdk 1.x cards (and its 0.3 conversions).
pytestmark = pytest.mark.a2a_sdk("1")

OTHER = {"uri": "urn:example:other", "required": True}


def a_card(*extensions: AgentExtension, version: str = "1.0") -> AgentCard:
    """An a2a-sdk 1.x card with these extensions, on an interface of this A2A version."""
    return AgentCard(
        name="agent",
        description="an agent",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1:1/a2a", protocol_binding="JSONRPC", protocol_version=version
            )
        ],
        capabilities=AgentCapabilities(extensions=list(extensions)),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )


def json_card(*extensions: Any) -> dict[str, Any]:
    """A card's JSON with these entries under capabilities.extensions."""
    return {"name": "agent", "capabilities": {"extensions": list(extensions)}}


def ours(**params: Any) -> dict[str, Any]:
    """Our extension's JSON entry with these params."""
    return {"uri": DEDUPLICATE_EXTENSION, "required": False, "params": params}


def test_the_protobuf_card_and_the_json_it_is_served_as() -> None:
    """a2a-sdk's card, and its /.well-known JSON (1.0 with 0.3 fields merged), read alike."""
    card = a_card(AgentExtension(uri="urn:example:other"), dedupe_extension(3600))
    assert read_dedupe_params(card) == DedupeParams(ttl=3600.0, per_caller=True)
    served = json.loads(json.dumps(agent_card_to_dict(card)))
    assert read_dedupe_params(served) == DedupeParams(ttl=3600.0, per_caller=True)


def test_the_0_3_layout_as_json_and_as_a2a_sdk_0_3_model() -> None:
    """0.3 cards list extensions under capabilities too: as JSON, and as the pydantic model."""
    legacy = {
        "name": "agent",
        "url": "http://127.0.0.1:1/a2a",
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": True, "extensions": [OTHER, ours(ttl=60)]},
    }
    assert read_dedupe_params(legacy) == DedupeParams(ttl=60.0)
    model = to_compat_agent_card(a_card(dedupe_extension(120), version="0.3"))
    assert read_dedupe_params(model) == DedupeParams(ttl=120.0)


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        (json_card(ours(ttl=10, perCaller=False)), DedupeParams(ttl=10.0, per_caller=False)),
        (json_card(ours(ttl=0.5)), DedupeParams(ttl=0.5, per_caller=True)),
        (json_card(OTHER, ours(ttl=1), ours(ttl=2)), DedupeParams(ttl=1.0)),  # the first
        (json_card(ours(ttl=0)), None),
        (json_card(ours(ttl=-5)), None),
        (json_card(ours(ttl=math.inf)), None),
        (json_card(ours(ttl=math.nan)), None),
        (json_card(ours(ttl=True)), None),
        (json_card(ours(ttl="86400")), None),
        (json_card(ours()), None),
        (json_card(ours(ttl=10, perCaller="yes")), None),
        (json_card({"uri": DEDUPLICATE_EXTENSION}), None),
        (json_card({"uri": DEDUPLICATE_EXTENSION, "params": [1, 2]}), None),
        (json_card(OTHER), None),
        (json_card(), None),
        (json_card(*([OTHER] * 256), ours(ttl=5)), None),  # past the most extensions read
        ({"capabilities": {"extensions": "urn:a2a-client-errors:ext:deduplicate:v1"}}, None),
        ({"capabilities": {"extensions": {"uri": DEDUPLICATE_EXTENSION}}}, None),
        ({"capabilities": None}, None),
        ({"extensions": [ours(ttl=5)]}, None),  # top level: not where A2A puts them
        ([ours(ttl=5)], None),
        (None, None),
        ("a card", None),
        (a_card(), None),
    ],
)
def test_what_counts_as_advertised(card: object, expected: DedupeParams | None) -> None:
    """A positive finite ttl is required; perCaller, when given, is a boolean."""
    assert read_dedupe_params(card) == expected


class Hostile:
    """An object whose every attribute read raises."""

    def __getattr__(self, name: str) -> Any:
        """Refuse."""
        raise RuntimeError(name)


def test_an_object_that_fights_being_read_is_no_card() -> None:
    """Attributes that raise, extensions that raise while iterated: None."""

    def extensions() -> Any:
        """A generator that fails half-way."""
        yield {"uri": "urn:example:other"}
        raise RuntimeError("broken")

    assert read_dedupe_params(Hostile()) is None
    assert read_dedupe_params({"capabilities": {"extensions": extensions()}}) is None
    assert read_dedupe_params({"capabilities": {"extensions": [Hostile()]}}) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(JSON)
def test_the_reader_never_raises_on_any_json(card: Any) -> None:
    """Any JSON value: params or None."""
    assert read_dedupe_params(card) is None or isinstance(read_dedupe_params(card), DedupeParams)


@given(JSON, st.sampled_from([DEDUPLICATE_EXTENSION, "urn:example:other"]))
def test_the_reader_never_raises_on_any_params(params: Any, uri: str) -> None:
    """Any params under our URI (or another): params with a positive ttl, or None."""
    found = read_dedupe_params(json_card({"uri": uri, "params": params}))
    if found is not None:
        assert uri == DEDUPLICATE_EXTENSION
        assert found.ttl > 0
        assert math.isfinite(found.ttl)


def test_reading_a_card_needs_no_a2a_sdk() -> None:
    """The module a client door imports brings neither a2a-sdk nor protobuf with it."""
    code = (
        "import sys, a2a_client_errors._dedupe_card as m; "
        "assert m.read_dedupe_params({'capabilities': {'extensions': "
        "[{'uri': m.DEDUPLICATE_EXTENSION, 'params': {'ttl': 1}}]}}).ttl == 1.0; "
        "assert m.read_dedupe_mark({'task': {'metadata': "
        "{m.DEDUPLICATE_EXTENSION: {'ttl': 2}}}}).ttl == 2.0; "
        "print(sorted(n for n in sys.modules if n == 'a2a' or n.startswith(('a2a.', 'google'))))"
    )
    done = subprocess.run(  # noqa: S603 (our own interpreter, a fixed snippet)
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------------------------
# The mark on an answer
# --------------------------------------------------------------------------------------------

PARAMS = {"ttl": 600.0, "perCaller": True}
MARKED = DedupeParams(ttl=600.0, per_caller=True)
TOO_DEEP: dict[str, Any] = {"metadata": {DEDUPLICATE_EXTENSION: PARAMS}}
for _ in range(5):
    TOO_DEEP = {"result": TOO_DEEP}


def marked_task() -> Task:
    """An a2a-sdk 1.x Task carrying the mark."""
    task = Task(id="t-1", context_id="c-1")
    task.metadata[DEDUPLICATE_EXTENSION] = PARAMS
    return task


def test_the_mark_read_from_every_shape_of_answer() -> None:
    """Protobuf, its JSON, JSON-RPC and REST bodies, stream events, 0.3 models: one reading."""
    task = marked_task()
    message = Message(message_id="a", role=Role.ROLE_AGENT)
    message.metadata.CopyFrom(task.metadata)
    as_json = MessageToDict(task)
    shapes: list[object] = [
        task,
        message,
        SendMessageResponse(task=task),
        SendMessageResponse(message=message),
        StreamResponse(task=task),
        StreamResponse(message=message),
        as_json,
        {"task": as_json},
        {"message": MessageToDict(message)},
        {"jsonrpc": "2.0", "id": 1, "result": {"task": as_json}},
        {"jsonrpc": "2.0", "id": 1, "result": {**as_json, "kind": "task"}},  # 0.3's result
        to_compat_task(task),
        to_compat_message(message),
        json.loads(to_compat_task(task).model_dump_json(by_alias=True, exclude_none=True)),
    ]
    for shape in shapes:
        assert read_dedupe_mark(shape) == MARKED, shape


@pytest.mark.parametrize(
    "answer",
    [
        Task(id="t"),
        StreamResponse(status_update=TaskStatusUpdateEvent(task_id="t")),
        {"task": {"id": "t", "metadata": {"urn:example:other": PARAMS}}},
        {"task": {"metadata": {DEDUPLICATE_EXTENSION: {"ttl": 0}}}},
        {"task": {"metadata": {DEDUPLICATE_EXTENSION: {"ttl": 5, "perCaller": "no"}}}},
        {"task": {"metadata": {DEDUPLICATE_EXTENSION: "ttl=5"}}},
        {"metadata": [DEDUPLICATE_EXTENSION]},
        {"error": {"code": -32000, "message": "refused"}},
        TOO_DEEP,
        "a task",
        None,
        42,
    ],
)
def test_what_is_no_mark(answer: object) -> None:
    """No entry, another extension's, no positive ttl, too deep, not an answer: None."""
    assert read_dedupe_mark(answer) is None


def test_an_answer_that_fights_being_read_has_no_mark() -> None:
    """Attributes that raise, anywhere on the way: None."""
    assert read_dedupe_mark(Hostile()) is None
    assert read_dedupe_mark({"task": Hostile()}) is None
    assert read_dedupe_mark({"task": {"metadata": Hostile()}}) is None


@given(JSON)
def test_the_mark_reader_never_raises_on_any_json(answer: Any) -> None:
    """Any JSON value: params or None."""
    found = read_dedupe_mark(answer)
    assert found is None or (found.ttl > 0 and math.isfinite(found.ttl))


@given(JSON, st.sampled_from(["task", "message", "result", "metadata"]))
def test_the_mark_reader_never_raises_on_any_mark(mark: Any, where: str) -> None:
    """Any value under our key, wrapped any way: params with a positive ttl, or None."""
    answer: dict[str, Any] = {"metadata": {DEDUPLICATE_EXTENSION: mark}}
    found = read_dedupe_mark(answer if where == "metadata" else {where: answer})
    assert found is None or (found.ttl > 0 and math.isfinite(found.ttl))
