"""What each framework recipe adds to a call: the framework's call with and without the guard.

    python examples/frameworks/bench.py FRAMEWORK [--calls 20] [--rounds 5]

FRAMEWORK is adk, strands, beeai, agno or fasta2a (installed in the venv it runs in, as for
its example). Both variants call the same local agent (no 503 here: the success path), one
after the other in each round; the figure is the median over rounds of the mean time per
call, and the ratio guarded / bare. The agent runs in this process, so the figures include
its work: the ratio is what a caller sees, not the guard's cost alone (bench/bench_guard.py
measures that).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
import warnings
from typing import TYPE_CHECKING, Any

import httpx
from _agent import LINE, LocalAgent

from a2a_client_errors import AsyncGuardTransport, Guard

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")


def _adk(url: str, http: httpx.AsyncClient, guarded: bool) -> Callable[[], Awaitable[Any]]:
    from a2a.client import ClientConfig, ClientFactory  # noqa: PLC0415
    from google.adk.agents.remote_a2a_agent import RemoteA2aAgent  # noqa: PLC0415
    from google.adk.runners import InMemoryRunner  # noqa: PLC0415

    from a2a_client_errors.integrations.a2a_sdk import guarded_factory  # noqa: PLC0415

    config = ClientConfig(httpx_client=http)
    use_factory = guarded and LINE == "v1"
    factory = guarded_factory(config) if use_factory else ClientFactory(config)
    remote = RemoteA2aAgent(
        name="echo", agent_card=url + "/.well-known/agent-card.json", a2a_client_factory=factory
    )
    runner = InMemoryRunner(agent=remote)
    return lambda: runner.run_debug("hello", quiet=True, session_id=uuid.uuid4().hex)


def _strands(url: str, http: httpx.AsyncClient, guarded: bool) -> Callable[[], Awaitable[Any]]:
    from a2a.client import ClientConfig  # noqa: PLC0415
    from strands.agent.a2a_agent import A2AAgent  # noqa: PLC0415

    remote = A2AAgent(url, client_config=ClientConfig(httpx_client=http))
    return lambda: remote.invoke_async("hello")


def _beeai(url: str, http: httpx.AsyncClient, guarded: bool) -> Callable[[], Awaitable[Any]]:
    from beeai_framework.adapters.a2a.agents import A2AAgent  # noqa: PLC0415
    from beeai_framework.memory import UnconstrainedMemory  # noqa: PLC0415

    async def run() -> Any:
        remote = A2AAgent(url=url, memory=UnconstrainedMemory())  # its memory fills: one per call
        return await remote.run("hello", httpx_client=http)

    return run


def _agno(url: str, http: httpx.AsyncClient, guarded: bool) -> Callable[[], Awaitable[Any]]:
    from agno.client.a2a import A2AClient  # noqa: PLC0415
    from agno.utils.http import set_default_async_client  # noqa: PLC0415

    client = A2AClient(url, protocol="json-rpc")

    async def send() -> Any:
        set_default_async_client(http)  # agno's one global client: this variant's
        return await client.send_message("hello")

    return send


def _fasta2a(url: str, http: httpx.AsyncClient, guarded: bool) -> Callable[[], Awaitable[Any]]:
    from fasta2a.client import A2AClient  # noqa: PLC0415
    from fasta2a.schema import Message  # noqa: PLC0415

    client = A2AClient(url, http_client=http)
    return lambda: client.send_message(
        Message(role="user", parts=[{"text": "hello"}], message_id=uuid.uuid4().hex)
    )


FRAMEWORKS = {
    "adk": _adk,
    "strands": _strands,
    "beeai": _beeai,
    "agno": _agno,
    "fasta2a": _fasta2a,
}


async def measure(framework: str, url: str, calls: int, rounds: int) -> dict[str, float]:
    """Median seconds per call of each variant, over rounds."""
    make = FRAMEWORKS[framework]
    guard = Guard()
    seconds: dict[str, list[float]] = {"bare": [], "guarded": []}
    async with (
        httpx.AsyncClient(timeout=30) as bare_http,
        httpx.AsyncClient(transport=AsyncGuardTransport(guard), timeout=30) as guarded_http,
    ):
        # adk on a2a-sdk 1.x: guard_client through the factory, over a plain httpx client.
        inner = bare_http if framework == "adk" and LINE == "v1" else guarded_http
        variants = {"bare": make(url, bare_http, False), "guarded": make(url, inner, True)}
        for call in variants.values():  # warm up: cards read, connections open
            await call()
        for _ in range(rounds):
            for name, call in variants.items():
                start = time.perf_counter()
                for _ in range(calls):
                    await call()
                seconds[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(values) for name, values in seconds.items()}


def main() -> None:
    """Measure one framework and print its line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=sorted(FRAMEWORKS))
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with LocalAgent(refuse=0) as agent:
        median = asyncio.run(measure(args.framework, agent.url, args.calls, args.rounds))
    bare, guarded = median["bare"], median["guarded"]
    print(
        f"{args.framework} (a2a-sdk {LINE}): bare {bare * 1e3:.2f} ms, guarded "
        f"{guarded * 1e3:.2f} ms per call, ratio {guarded / bare:.3f}"
    )


if __name__ == "__main__":
    main()
