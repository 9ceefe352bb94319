"""Test agents of ours that behave as other A2A servers do, where a look-up is concerned.

Each is a real a2a-sdk 1.x server (its ``DefaultRequestHandler`` and JSON-RPC route) on
127.0.0.1, whose task store or answers depart from a2a-sdk's in one way the A2A spec allows,
the way a server written elsewhere does (protocol notes §17):

* ``lazy``: records its task only when its work ends, as @a2a-js/sdk 1.3.0 does with an
  executor that works first and publishes its events at the end: during the work nothing can
  be listed or read. The work is held until the test releases it (`ForeignAgent.release`).
* ``own_id``: stores the user's message under a messageId of the agent's own (agents that
  rebuild their history), so the task's history starts with another user message.
* ``compact``: once the task is finished, its history is compacted to one summary message.
* ``skewed``: its clock is ten minutes behind: every status timestamp is.
* ``naive``: writes status timestamps without an offset, in local time on a UTC-8 host (a
  naive ``datetime.now()``); a2a-sdk's own client cannot parse such answers.
* ``unstable``: lists by last update with offset page tokens, and other tasks are updated
  between two pages (A2A issue #1263): a task moves between pages, is skipped, another is
  repeated, the count still matches.
* ``no_history``: never puts the user's message in a new task's history (a2a-java 1.2.0.Final).

Beside them, ``plain`` (not one of `KINDS`) is a2a-sdk as it is, whose held work (a messageId
starting ``hold-``) is held after the task is recorded: a task that lists while it works.

`ForeignAgent` starts one (bounded, stopped on exit) and counts the executor's runs per
messageId. Nothing here is shipped: it lives with the tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import httpx

from tests.asgi import serve

if TYPE_CHECKING:
    from collections.abc import Callable

KINDS = ("lazy", "own_id", "compact", "skewed", "naive", "unstable", "no_history")
PLAIN = "plain"
SKEW = timedelta(minutes=10)
LOCAL = timezone(timedelta(hours=-8))
_ZULU = re.compile(rb'"timestamp":\s*"([0-9T:.\-]+)Z"')


class Runs:
    """The executor's runs per messageId, and the held work the test releases (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ran = threading.Condition(self._lock)
        self.counts: Counter[str] = Counter()
        self.tasks: dict[str, set[str]] = {}
        self._released: set[str] = set()
        self._all = False
        self._events: dict[str, asyncio.Event] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    def ran(self, message_id: str) -> None:
        """Count one run of ``message_id``."""
        with self._ran:
            self.counts[message_id] += 1
            self._ran.notify_all()

    def wait_ran(self, message_id: str, timeout: float) -> bool:
        """Wait until ``message_id`` ran at least once (at most ``timeout`` seconds)."""
        with self._ran:
            return self._ran.wait_for(lambda: self.counts[message_id] > 0, timeout)

    def made(self, message_id: str, task_id: str) -> None:
        """Note that a run of ``message_id`` made the task ``task_id``."""
        with self._lock:
            self.tasks.setdefault(message_id, set()).add(task_id)

    def made_by(self, message_id: str) -> set[str]:
        """The tasks the runs of ``message_id`` made."""
        with self._lock:
            return set(self.tasks.get(message_id, ()))

    async def held(self, message_id: str) -> None:
        """Wait until the test releases ``message_id`` (or everything)."""
        with self._lock:
            if self._all or message_id in self._released:
                return
            event = self._events.setdefault(message_id, asyncio.Event())
            self.loop = asyncio.get_running_loop()
        await event.wait()

    def release(self, message_id: str | None = None) -> None:
        """Let held work go on: one message's, or everyone's from now on (None)."""
        with self._lock:
            if message_id is None:
                self._all = True
                events = list(self._events.values())
            else:
                self._released.add(message_id)
                events = [self._events[message_id]] if message_id in self._events else []
            loop = self.loop
        for event in events:
            if loop is not None:
                loop.call_soon_threadsafe(event.set)


class ForeignStore:
    """An a2a-sdk ``TaskStore`` that stores and lists tasks as the kind of agent does.

    The task a2a-sdk hands in is never changed (it is a2a-sdk's working copy): a shaped copy
    is what is kept.
    """

    def __init__(self, inner: Any, kind: str, touch: Any = None) -> None:
        self.inner = inner
        self.kind = kind
        self.hidden: dict[str, Any] = {}  # the lazy agent's tasks, until their work ends
        self.touch = touch  # unstable: called between two pages (another task updated)

    async def save(self, task: Any, context: Any) -> None:
        """Keep ``task`` as the kind of agent does."""
        from a2a.types import Message, Part, Role, Task

        kept = Task()
        kept.CopyFrom(task)
        state = kept.status.state
        terminal = state in (3, 4, 5, 7)  # COMPLETED, FAILED, CANCELED, REJECTED
        if self.kind == "own_id":
            for message in kept.history:
                if message.role == Role.ROLE_USER:
                    message.message_id = f"agent-own-{message.message_id}"
        elif self.kind == "compact" and terminal:
            summary = Message(
                message_id=f"summary-{kept.id}",
                role=Role.ROLE_AGENT,
                context_id=kept.context_id,
                task_id=kept.id,
                parts=[Part(text="a summary of the conversation")],
            )
            del kept.history[:]
            kept.history.append(summary)
        elif self.kind == "no_history":
            agents = [m for m in kept.history if m.role != Role.ROLE_USER]
            del kept.history[:]
            kept.history.extend(agents)
        if self.kind in ("skewed", "naive") and kept.status.HasField("timestamp"):
            moment = kept.status.timestamp.ToDatetime(tzinfo=timezone.utc)
            if self.kind == "skewed":
                kept.status.timestamp.FromDatetime(moment - SKEW)
        if self.kind == "lazy" and not terminal:
            self.hidden[kept.id] = kept  # nothing listed or read while the work goes on
            return
        self.hidden.pop(kept.id, None)
        await self.inner.save(kept, context)

    async def get(self, task_id: str, context: Any) -> Any:
        """The task as kept (the lazy agent's own work sees its hidden tasks)."""
        if task_id in self.hidden:
            return self.hidden[task_id]
        return await self.inner.get(task_id, context)

    async def delete(self, task_id: str, context: Any) -> None:
        """Forget the task."""
        self.hidden.pop(task_id, None)
        await self.inner.delete(task_id, context)

    async def list(self, params: Any, context: Any) -> Any:
        """ListTasks; ``unstable``: by last update, offset tokens, others touched between."""
        if self.kind != "unstable":
            return await self.inner.list(params, context)
        from a2a.types import a2a_pb2

        everything = a2a_pb2.ListTasksRequest()
        everything.CopyFrom(params)
        everything.page_size = 100
        everything.page_token = ""
        tasks: list[Any] = []
        while True:
            page = await self.inner.list(everything, context)
            tasks.extend(page.tasks)
            if not page.next_page_token:
                break
            everything.page_token = page.next_page_token
        offset = int(params.page_token or "0")
        size = params.page_size or 50
        answer = a2a_pb2.ListTasksResponse(
            tasks=tasks[offset : offset + size],
            next_page_token=str(offset + size) if offset + size < len(tasks) else "",
            total_size=len(tasks),
            page_size=size,
        )
        if self.touch is not None:
            await self.touch(self, tasks, context)
        return answer


async def _touch_the_oldest(store: ForeignStore, tasks: list[Any], context: Any) -> None:
    """Update the task at the bottom of the listing: it moves to the top between two pages."""
    if len(tasks) < 2:
        return
    oldest = tasks[-1]
    oldest.status.timestamp.GetCurrentTime()
    await store.inner.save(oldest, context)


class NaiveTimestamps:
    """ASGI middleware: every ``"timestamp": "...Z"`` answered as naive local time (UTC-8)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Rewrite the body of each answer (a2a-sdk writes UTC with ``Z``)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def rewriting(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = _ZULU.sub(_local, b"".join(chunks))
            headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewriting)


def _local(match: re.Match[bytes]) -> bytes:
    text = match.group(1).decode()
    moment = datetime.fromisoformat(text).replace(tzinfo=timezone.utc).astimezone(LOCAL)
    return b'"timestamp": "' + moment.replace(tzinfo=None).isoformat().encode() + b'"'


def _executor(kind: str, runs: Runs, work: float | None) -> Any:
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater
    from a2a.types import Part, Task, TaskState, TaskStatus

    class Echo(AgentExecutor):  # type: ignore[misc]
        """Echoes the message; the lazy agent holds its work until the test releases it."""

        async def execute(self, context: Any, event_queue: Any) -> None:
            message = context.message
            message_id = message.message_id if message is not None else ""
            runs.ran(message_id)
            held = message_id.startswith("hold-")
            if kind == "lazy" or (held and kind != PLAIN):
                if work is None:
                    await runs.held(message_id)  # the work, before any event
                else:
                    await asyncio.sleep(work)  # the agent's own work, as long as it takes
            task_id, context_id = context.task_id or "", context.context_id or ""
            if context.current_task is None:
                runs.made(message_id, task_id)
                task = Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                )
                if message is not None:
                    task.history.append(message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task_id, context_id)
            if kind == PLAIN and held:
                await updater.start_work(updater.new_agent_message([Part(text="working")]))
                await runs.held(message_id)  # the work, once the task is recorded
            await updater.start_work(updater.new_agent_message([Part(text="on it")]))
            await updater.complete(updater.new_agent_message([Part(text="done")]))

        async def cancel(self, context: Any, event_queue: Any) -> None:
            """Nothing to cancel."""

    return Echo()


class ForeignAgent:
    """One test agent of a ``kind`` of `KINDS`, served on 127.0.0.1 while in use.

    The lazy agent's work lasts until the test releases it, or ``work`` seconds when given.

    Attributes:
        url: its JSON-RPC endpoint.
        runs: the executor's runs per messageId (`Runs`).
        card: its agent card (an a2a-sdk ``AgentCard``), listing ``url``.
    """

    def __init__(self, kind: str, *, work: float | None = None) -> None:
        if kind not in (*KINDS, PLAIN):
            raise ValueError(f"no such kind of agent: {kind}")
        self.kind = kind
        self.work = work  # the lazy agent's work, in seconds (None: until released)
        self.runs = Runs()
        self.url = ""
        self.card: Any = None
        self.store: ForeignStore | None = None
        self._serving: contextlib.ExitStack | None = None

    def __enter__(self) -> ForeignAgent:
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.routes import create_jsonrpc_routes
        from a2a.server.tasks import InMemoryTaskStore
        from a2a.types import a2a_pb2
        from starlette.applications import Starlette

        touch = _touch_the_oldest if self.kind == "unstable" else None
        self.store = ForeignStore(InMemoryTaskStore(), self.kind, touch)
        card = a2a_pb2.AgentCard(
            name=f"a {self.kind} agent",
            description="a test agent",
            version="1.0.0",
            capabilities=a2a_pb2.AgentCapabilities(streaming=False),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[a2a_pb2.AgentSkill(id="echo", name="echo", description="echoes", tags=["t"])],
        )
        interface = card.supported_interfaces.add(
            protocol_binding="JSONRPC", protocol_version="1.0"
        )
        interface.url = "http://127.0.0.1/jsonrpc"  # its own, once it listens
        handler = DefaultRequestHandler(
            agent_executor=_executor(self.kind, self.runs, self.work),
            task_store=self.store,
            agent_card=card,
        )
        app: Any = Starlette(routes=list(create_jsonrpc_routes(handler, rpc_url="/jsonrpc")))
        if self.kind == "naive":
            app = NaiveTimestamps(app)
        self._serving = contextlib.ExitStack()
        base = self._serving.enter_context(serve(app))
        self.url = interface.url = f"{base}/jsonrpc"
        self.card = card
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.runs.release()
        if self._serving is not None:
            self._serving.close()

    def release(self, message_id: str | None = None) -> None:
        """Let held work go on (see `Runs.release`)."""
        self.runs.release(message_id)

    def listing(self) -> list[dict[str, Any]]:
        """Every task it lists now, as JSON (a plain ListTasks, read to its end)."""
        tasks: list[dict[str, Any]] = []
        token = ""
        while True:
            params: dict[str, Any] = {"pageSize": 100}
            if token:
                params["pageToken"] = token
            body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params}
            answer = httpx.post(self.url, json=body, headers={"A2A-Version": "1.0"}, timeout=10)
            result = json.loads(answer.content)["result"]
            tasks.extend(result.get("tasks", []))
            token = result.get("nextPageToken", "")
            if not token:
                return tasks


class Abandoning(httpx.AsyncBaseTransport):
    """Gives up at once on the sends ``loses`` names (a read timeout): the request goes on.

    What a client's read timeout does to a send whose agent works before it answers (the
    lazy agent records nothing meanwhile): the request reaches the agent, which does the
    work; its answer never reaches the client. `settle` waits for those answers.

    Args:
        loses: given a SendMessage request's body, whether its answer is abandoned.
    """

    def __init__(self, loses: Callable[[bytes], bool]) -> None:
        self.loses = loses
        self.inner = httpx.AsyncHTTPTransport()
        self.pending: set[asyncio.Task[None]] = set()
        self.sends = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; a send ``loses`` names goes on in the background, unanswered."""
        body = await request.aread()
        if b'"SendMessage"' in body:
            self.sends += 1
            if self.loses(body):
                copy = httpx.Request(request.method, request.url, headers=request.headers)
                copy.stream = httpx.ByteStream(body)
                task = asyncio.create_task(self._send(copy))
                self.pending.add(task)
                task.add_done_callback(self.pending.discard)
                raise httpx.ReadTimeout("no answer in time", request=request)
        return await self.inner.handle_async_request(request)

    async def _send(self, request: httpx.Request) -> None:
        response = await self.inner.handle_async_request(request)
        await response.aread()
        await response.aclose()

    async def settle(self) -> None:
        """Wait for the abandoned requests' answers (the agent's work has ended)."""
        while self.pending:
            await self.pending.pop()  # taken first: a done task's callback runs only later

    async def aclose(self) -> None:
        """Wait for what is pending, and close."""
        await self.settle()
        await self.inner.aclose()


def first_send() -> Callable[[bytes], bool]:
    """A ``loses`` for `Abandoning`: the first send's answer only."""
    armed = [1]

    def loses(body: bytes) -> bool:
        if armed[0]:
            armed[0] -= 1
            return True
        return False

    return loses
