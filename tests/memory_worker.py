"""Read a large generated body in this process and print its peak RSS growth, for memory tests.

    python -m tests.memory_worker transport|async-transport|events|unfinished [--mb 300]

* ``transport``: a ``client.stream()`` GET of a JSON body of ``--mb`` megabytes through
  `GuardTransport` (a hook watching, so every body is judged), read chunk by chunk;
* ``async-transport``: the same through `AsyncGuardTransport`;
* ``events``: a stream of 64 KiB events, ``--mb`` megabytes in all, through `iter_events`;
* ``unfinished``: one event that never ends, ``--mb`` megabytes, through `iter_events`.

The body is generated as it is read (nothing holds it), so what the process keeps is what the
reader keeps. Prints one JSON line: the megabytes read, and the peak RSS before and after, in
kilobytes (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
from typing import TYPE_CHECKING, Any

import httpx

from a2a_client_errors import AsyncGuardTransport, CallFailed, Guard, GuardTransport
from a2a_client_errors._streaming import iter_events
from a2a_client_errors.testing import RecordingHook

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

CHUNK = 64 * 1024


def _json_body(megabytes: int) -> Iterator[bytes]:
    yield b'{"jsonrpc": "2.0", "id": 1, "result": {"pad": "'
    for _ in range(megabytes * 1024 * 1024 // CHUNK):
        yield b"x" * CHUNK
    yield b'"}}'


async def _ajson_body(megabytes: int) -> AsyncIterator[bytes]:
    for chunk in _json_body(megabytes):
        yield chunk


def _events_body(megabytes: int) -> Iterator[bytes]:
    status = b'{"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}, "p": "'
    for _ in range(megabytes * 1024 * 1024 // CHUNK):
        yield b"data: " + status + b"x" * CHUNK + b'"}\n\n'
    done = b'{"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}'
    yield b"data: " + done + b"\n\n"


def _unfinished_body(megabytes: int) -> Iterator[bytes]:
    yield b"data: "
    for _ in range(megabytes * 1024 * 1024 // CHUNK):
        yield b"x" * CHUNK


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _transport(megabytes: int) -> int:
    def peer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=_json_body(megabytes)
        )

    guard = Guard(hooks=[RecordingHook()])
    size = 0
    transport = GuardTransport(guard, inner=httpx.MockTransport(peer))
    with (
        httpx.Client(transport=transport) as client,
        client.stream("GET", "http://agent.example/tasks/t-1") as response,
    ):
        for chunk in response.iter_bytes():
            size += len(chunk)
    return size


def _async_transport(megabytes: int) -> int:
    async def peer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=_ajson_body(megabytes)
        )

    async def run() -> int:
        guard = Guard(hooks=[RecordingHook()])
        size = 0
        transport = AsyncGuardTransport(guard, inner=httpx.MockTransport(peer))
        async with (
            httpx.AsyncClient(transport=transport) as client,
            client.stream("GET", "http://agent.example/tasks/t-1") as response,
        ):
            async for chunk in response.aiter_bytes():
                size += len(chunk)
        return size

    return asyncio.run(run())


def _events(body: Iterator[bytes]) -> int:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body
        )
    )
    count = 0
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", "http://agent.example/") as response,
    ):
        try:
            for _ in iter_events(response, operation="SubscribeToTask"):
                count += 1
        except CallFailed:
            count = -1
    return count


def main() -> None:
    """Run one reading; print what it read and the peak RSS around it."""
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["transport", "async-transport", "events", "unfinished"])
    parser.add_argument("--mb", type=int, default=300)
    args = parser.parse_args()
    before = _peak()
    result: Any
    if args.mode == "transport":
        result = _transport(args.mb)
    elif args.mode == "async-transport":
        result = _async_transport(args.mb)
    elif args.mode == "events":
        result = _events(_events_body(args.mb))
    else:
        result = _events(_unfinished_body(args.mb))
    print(
        json.dumps({"mode": args.mode, "result": result, "before_kb": before, "peak_kb": _peak()})
    )


if __name__ == "__main__":
    main()
