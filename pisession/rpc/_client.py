"""An asyncio client for ``pi --mode rpc``: spawn Pi, send commands, read responses and events,
end Pi without leaving a process behind.

Pi runs in a process group of its own (``start_new_session``): closing the client, a cancelled
task, a client that was never closed, or Pi crashing ends the whole group, the tools Pi started
included.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shlex
import signal
import weakref
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from attrs import define, field

from ._errors import PiExitedError, RpcCommandError, RpcError
from ._framing import JsonlDecoder, encode_record
from ._stream import EventStream, PromptResult
from ._types import (
    BashResultData,
    CancelledData,
    Command,
    CompactionResultData,
    EntriesData,
    Event,
    ForkData,
    ImageData,
    PromptDisposition,
    QueueData,
    QueuedDisposition,
    QueueMode,
    SessionState,
    SessionStatsData,
    SlashCommandData,
    StreamingBehavior,
    ThinkingLevelName,
    TreeData,
)

if TYPE_CHECKING:
    from types import TracebackType

    from .._manager import SessionManager
    from .._model import CompactionEntry
    from ..compaction import AsyncSummarizer, CompactionSettings, Navigation, Summarizer
    from ._handoff import Handoff

__all__ = ["PiRpcClient", "StartingPi"]

_CHUNK = 1 << 16
_STDERR_KEPT = 8192


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _default_command() -> list[str]:
    pi_bin = os.environ.get("PI_BIN")
    return shlex.split(pi_bin) if pi_bin else ["pi"]


class StartingPi:
    """What :meth:`PiRpcClient.start` returns: awaited, the client
    (``client = await PiRpcClient.start()``); used as ``async with``, the client, closed when
    the block ends."""

    def __init__(self, make: Callable[[], Awaitable[PiRpcClient]]) -> None:
        self._make = make
        self._client: PiRpcClient | None = None

    def __await__(self) -> Generator[Any, None, PiRpcClient]:
        return self._make().__await__()

    async def __aenter__(self) -> PiRpcClient:
        self._client = await self._make()
        return self._client

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._client is not None:
            await self._client.__aexit__(kind, error, tb)


@define(eq=False)
class _Run:
    """Pi's activity as the events tell it: a run lasts from a started prompt (or
    ``agent_start``) to ``agent_settled``."""

    running: bool = False
    settled: asyncio.Event = field(factory=asyncio.Event)

    def start(self) -> None:
        self.running = True
        self.settled.clear()

    def settle(self) -> None:
        self.running = False
        self.settled.set()


class PiRpcClient:
    """A running ``pi --mode rpc`` and the commands it takes::

        async with PiRpcClient.start("session.jsonl") as client:
            result = await client.prompt("What does this repository do?")
            print(result.text)
            state = await client.get_state()

    Every command of Pi 1.6.0 has a method returning the response's ``data``;
    :meth:`request` sends any command. A ``success: false`` response raises
    :class:`RpcCommandError`; Pi ending raises :class:`PiExitedError` in every waiting call.
    Commands may be sent from several tasks at once. During a :meth:`handoff` they wait until
    Pi has taken the edit up.
    """

    def __init__(self, process: asyncio.subprocess.Process, *, env: Mapping[str, str] | None = None) -> None:
        """Use :meth:`start`; this wraps a process already started in a group of its own."""
        self._process = process
        self._env = dict(env) if env is not None else dict(os.environ)
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._streams: set[EventStream] = set()
        self._stderr = bytearray()
        self._run = _Run()
        self._open = asyncio.Event()  # cleared while a handoff holds the commands back
        self._open.set()
        self._handoff_task: asyncio.Task[Any] | None = None  # the task inside the handoff block
        self._handoff_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._exited = asyncio.Event()
        self._closing = False
        self._cursor: str | None = None  # the newest entry prompt() has seen
        self._finalizer = weakref.finalize(self, _kill_group, process.pid)
        self._reader = asyncio.create_task(self._read_stdout())
        self._stderr_reader = asyncio.create_task(self._read_stderr())

    # -- starting and ending ---------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        session: str | os.PathLike[str] | None = None,
        *,
        command: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        timeout: float = 60.0,
    ) -> StartingPi:
        """Spawn ``pi --mode rpc [--session SESSION] ARGS`` and wait until it answers::

            client = await PiRpcClient.start("s.jsonl", command=["../shared/pi-oracle/pi.sh"])
            async with PiRpcClient.start(args=["--no-session"]) as client: ...

        :param session: the session file Pi opens (``--session``); None: Pi's default (a new
            session in its session folder; ``args=["--no-session"]`` keeps none).
        :param command: the program and its leading arguments; default ``$PI_BIN`` (split as a
            shell would) or ``pi`` on ``PATH``.
        :param cwd: Pi's working folder (default: this process's).
        :param env: Pi's whole environment (default: this process's), e.g. with
            ``PI_CODING_AGENT_DIR``.
        :param args: more command-line arguments (``--model``, ``--no-session``, ...).
        :param timeout: seconds Pi may take to answer its first command.
        """

        async def make() -> PiRpcClient:
            argv = [*(command if command is not None else _default_command()), "--mode", "rpc"]
            if session is not None:
                argv += ["--session", os.fspath(session)]
            argv += list(args)
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=os.fspath(cwd) if cwd is not None else None,
                    env=dict(env) if env is not None else None,
                    start_new_session=True,  # its own process group: closing ends all of it
                )
            except OSError as error:
                raise RpcError(f"Cannot start Pi ({shlex.join(argv)}): {error}") from error
            client = cls(process, env=env)
            try:
                await asyncio.wait_for(client.get_state(), timeout)
            except BaseException as error:
                await client.close(timeout=0)
                if isinstance(error, asyncio.TimeoutError):
                    raise client._exited_error(f"Pi did not answer within {timeout} s") from None
                raise
            return client

        return StartingPi(make)

    @property
    def pid(self) -> int:
        """Pi's process id (also its process group's id)."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """Pi's exit status once it has ended (negative: the signal), else None."""
        return self._process.returncode

    @property
    def stderr(self) -> str:
        """The last 8 KiB Pi wrote to stderr (its diagnostics; never protocol records)."""
        return self._stderr.decode("utf-8", "replace")

    async def close(self, timeout: float = 10.0) -> int | None:
        """End Pi and every process of its group; returns Pi's exit status.

        Closes Pi's stdin (Pi's orderly shutdown), waits ``timeout`` seconds, then sends
        SIGTERM and, a few seconds later, SIGKILL to the group. Cancelled meanwhile, it kills the
        group at once. Calling it again does nothing more.
        """
        self._closing = True
        process = self._process
        try:
            if process.returncode is None:
                if process.stdin is not None and not process.stdin.is_closing():
                    process.stdin.close()
                if not await self._wait_exit(timeout):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGTERM)
                    if not await self._wait_exit(3.0):
                        _kill_group(process.pid)
                        await self._wait_exit(None)
        except BaseException:
            _kill_group(process.pid)  # cancelled (or worse): nothing may outlive the client
            raise
        finally:
            # Pi has ended; what it started in its group (a bash tool's children) goes too.
            _kill_group(process.pid)
            self._finalizer.detach()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.gather(self._reader, self._stderr_reader), 5.0)
        return process.returncode

    async def _wait_exit(self, timeout: float | None) -> bool:
        try:
            await asyncio.wait_for(self._process.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def __aenter__(self) -> PiRpcClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        # A cancelled block does not wait for Pi's orderly shutdown: Pi writes each entry as it
        # is made, so ending it at once loses nothing already written.
        await self.close(timeout=0 if isinstance(error, asyncio.CancelledError) else 10.0)

    def _exited_error(self, message: str) -> PiExitedError:
        code = self._process.returncode
        tail = self.stderr.strip()
        how = (
            "" if code is None else (f" (killed by signal {-code})" if code < 0 else f" (exit status {code})")
        )
        text = f"{message}{how}"
        if tail:
            text += f"; Pi's stderr ends: {tail[-1000:]}"
        return PiExitedError(text, returncode=code, stderr=tail)

    # -- reading ----------------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        decoder = JsonlDecoder()
        try:
            while chunk := await stdout.read(_CHUNK):
                for line in decoder.feed(chunk):
                    self._dispatch(line)
            for line in decoder.end():
                self._dispatch(line)
        finally:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._process.wait(), 10.0)
            self._exited.set()
            self._open.set()  # nothing waits for a handoff of a Pi that is gone
            error = self._exited_error("Pi closed" if self._closing else "Pi exited")
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(error)
            self._pending.clear()
            self._run.settle()
            for stream in list(self._streams):
                stream._put(None)

    async def _read_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        while chunk := await stderr.read(_CHUNK):
            self._stderr += chunk
            del self._stderr[:-_STDERR_KEPT]

    def _dispatch(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            record = json.loads(line)
        except ValueError:
            record = {"type": "unparsed_line", "line": line.decode("utf-8", "replace")}
        if not isinstance(record, dict):
            record = {"type": "unparsed_line", "line": line.decode("utf-8", "replace")}
        if record.get("type") == "response":
            future = self._pending.pop(str(record.get("id")), None) if "id" in record else None
            if future is not None:
                if (
                    record.get("command") == "prompt"
                    and record.get("success")
                    and isinstance(record.get("data"), dict)
                    and record["data"].get("disposition") == "started"
                ):
                    self._run.start()  # before agent_start: a handoff must not slip in between
                if not future.done():
                    future.set_result(record)
                return
        kind = record.get("type")
        if kind == "agent_start":
            self._run.start()
        elif kind == "agent_settled":
            self._run.settle()
        event = cast(Event, record)
        for stream in list(self._streams):
            stream._put(event)

    def events(self) -> EventStream:
        """A stream of every event Pi writes from now on (see :class:`EventStream`)."""
        stream = EventStream(self)
        if self._exited.is_set():
            stream._put(None)
        else:
            self._streams.add(stream)
        return stream

    async def wait_for_event(
        self, predicate: Callable[[Event], bool], *, timeout: float | None = None
    ) -> Event:
        """The next event for which ``predicate`` is true (from the moment of the call)."""
        async with self.events() as events:
            while True:
                event = await events.next(timeout)
                if predicate(event):
                    return event

    # -- sending ----------------------------------------------------------------------------------

    async def request(self, command: Mapping[str, Any] | Command, *, timeout: float | None = None) -> Any:
        """Send any command and return its response's ``data`` (None when it has none)::

            state = await client.request({"type": "get_state"})

        Raises :class:`RpcCommandError` on ``success: false``, :class:`PiExitedError` when Pi
        ends first, ``TimeoutError`` after ``timeout`` seconds. During a handoff it waits until
        Pi has taken the edit up.
        """
        await self._wait_open()
        return await self._send(command, timeout=timeout)

    async def _wait_open(self) -> None:
        if not self._open.is_set() and asyncio.current_task() is self._handoff_task:
            raise RpcError(
                "A command sent from inside a handoff block would wait for the block to end: edit "
                "with the manager inside the block, send commands after it (or from another task)"
            )
        # Woken when a handoff ends, another may have begun before this task runs: look again.
        # From the last look to the command's registration in _pending nothing yields, so a
        # handoff beginning later waits for the command.
        while not self._open.is_set():
            await self._open.wait()

    async def _send(self, command: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        """:meth:`request` without waiting for a handoff (the handoff's own commands)."""
        response = await self._exchange(command, timeout=timeout)
        if not response.get("success"):
            raise RpcCommandError(
                str(response.get("command", command.get("type"))), str(response.get("error"))
            )
        return response.get("data")

    async def _exchange(self, command: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        if self._exited.is_set() or self._closing:
            raise self._exited_error("Pi is not running" if not self._closing else "The client is closed")
        request_id = f"pisession-{next(self._ids)}"
        record = {**command, "id": request_id}
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            stdin = self._process.stdin
            assert stdin is not None
            async with self._write_lock:
                try:
                    stdin.write(encode_record(record))
                    await stdin.drain()
                except (ConnectionError, RuntimeError) as error:
                    raise self._exited_error(f"Cannot write to Pi: {error}") from None
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        finally:
            self._pending.pop(request_id, None)

    async def _wait_idle(self) -> None:
        """Until Pi runs nothing: no run of this client's prompts and no compaction unsettled."""
        while True:
            if self._run.running:
                settled = asyncio.ensure_future(self._run.settled.wait())
                exited = asyncio.ensure_future(self._exited.wait())
                await asyncio.wait({settled, exited}, return_when=asyncio.FIRST_COMPLETED)
                settled.cancel()
                exited.cancel()
                if self._exited.is_set():
                    raise self._exited_error("Pi exited")
                continue
            state = cast(SessionState, await self._send({"type": "get_state"}))
            if not state.get("isStreaming") and not state.get("isCompacting") and not self._run.running:
                return
            await asyncio.sleep(0.05)

    # -- prompting ----------------------------------------------------------------------------------

    async def prompt(
        self,
        message: str,
        *,
        images: Sequence[ImageData] = (),
        streaming_behavior: StreamingBehavior | None = None,
        timeout: float | None = None,
    ) -> PromptResult:
        """Send a prompt and return once Pi has settled (``agent_settled``), with the entries Pi
        appended meanwhile::

            result = await client.prompt("Summarize README.md")
            print(result.text, result.leaf_id)

        A prompt an extension handles (``disposition`` ``handled``) or that Pi queues returns
        at once. ``timeout`` bounds the whole wait (``TimeoutError``; Pi keeps running: send
        :meth:`abort`).
        """
        await self._wait_open()
        before = await self._entries_since(self._cursor)
        cursor = before["entries"][-1]["id"] if before["entries"] else self._cursor
        command: dict[str, Any] = {"type": "prompt", "message": message}
        if images:
            command["images"] = list(images)
        if streaming_behavior is not None:
            command["streamingBehavior"] = streaming_behavior

        async def run() -> PromptResult:
            async with self.events() as events:
                await self._wait_open()  # the entries were read: a handoff may have begun since
                data = await self._send(command)
                disposition = cast(PromptDisposition, data["disposition"])
                if disposition != "started":
                    return PromptResult(disposition)
                async for event in events:
                    if event.get("type") == "agent_settled":
                        aborted = bool(event.get("aborted"))
                        break
                else:
                    raise self._exited_error("Pi exited before the prompt settled")
            after = await self._entries_since(cursor)
            return PromptResult(disposition, tuple(after["entries"]), after["leafId"], aborted)

        return await asyncio.wait_for(run(), timeout)

    async def _entries_since(self, cursor: str | None) -> EntriesData:
        """Pi's entries after ``cursor`` (all of them without one, or when Pi no longer holds
        it: another session), remembering the newest as the next cursor, so a prompt in a long
        session does not fetch the whole session each time."""
        data: EntriesData | None = None
        if cursor is not None:
            with contextlib.suppress(RpcCommandError):
                data = cast(EntriesData, await self._send({"type": "get_entries", "since": cursor}))
        if data is None:
            data = cast(EntriesData, await self._send({"type": "get_entries"}))
            self._cursor = None
        if data["entries"]:
            self._cursor = data["entries"][-1]["id"]
        return data

    async def steer(self, message: str, *, images: Sequence[ImageData] = ()) -> QueuedDisposition:
        """Queue a steering message during a run; Pi's disposition (``queued`` or ``handled``)."""
        data = await self.request(
            {"type": "steer", "message": message, **({"images": list(images)} if images else {})}
        )
        return cast(QueuedDisposition, data["disposition"])

    async def follow_up(self, message: str, *, images: Sequence[ImageData] = ()) -> QueuedDisposition:
        """Queue a message for when the run ends."""
        data = await self.request(
            {"type": "follow_up", "message": message, **({"images": list(images)} if images else {})}
        )
        return cast(QueuedDisposition, data["disposition"])

    async def abort(self) -> None:
        """Abort the current run; returns once Pi is idle."""
        await self.request({"type": "abort"})

    async def clear_queue(self) -> QueueData:
        return cast(QueueData, await self.request({"type": "clear_queue"}))

    # -- state, model, settings ---------------------------------------------------------------------

    async def get_state(self) -> SessionState:
        return cast(SessionState, await self.request({"type": "get_state"}))

    async def get_messages(self) -> list[dict[str, Any]]:
        """The messages of Pi's current context (``get_messages``)."""
        data = await self.request({"type": "get_messages"})
        return cast("list[dict[str, Any]]", data["messages"])

    async def set_model(self, provider: str, model_id: str) -> dict[str, Any]:
        return cast(
            "dict[str, Any]",
            await self.request({"type": "set_model", "provider": provider, "modelId": model_id}),
        )

    async def cycle_model(self) -> dict[str, Any] | None:
        return cast("dict[str, Any] | None", await self.request({"type": "cycle_model"}))

    async def get_available_models(self) -> list[dict[str, Any]]:
        data = await self.request({"type": "get_available_models"})
        return cast("list[dict[str, Any]]", data["models"])

    async def set_thinking_level(self, level: ThinkingLevelName) -> None:
        await self.request({"type": "set_thinking_level", "level": level})

    async def cycle_thinking_level(self) -> str | None:
        data = await self.request({"type": "cycle_thinking_level"})
        return None if data is None else cast(str, data["level"])

    async def get_available_thinking_levels(self) -> list[str]:
        data = await self.request({"type": "get_available_thinking_levels"})
        return cast("list[str]", data["levels"])

    async def set_steering_mode(self, mode: QueueMode) -> None:
        await self.request({"type": "set_steering_mode", "mode": mode})

    async def set_follow_up_mode(self, mode: QueueMode) -> None:
        await self.request({"type": "set_follow_up_mode", "mode": mode})

    async def set_auto_compaction(self, enabled: bool) -> None:
        await self.request({"type": "set_auto_compaction", "enabled": enabled})

    async def set_auto_retry(self, enabled: bool) -> None:
        await self.request({"type": "set_auto_retry", "enabled": enabled})

    async def abort_retry(self) -> None:
        await self.request({"type": "abort_retry"})

    async def get_commands(self) -> list[SlashCommandData]:
        data = await self.request({"type": "get_commands"})
        return cast("list[SlashCommandData]", data["commands"])

    # -- compaction, bash ---------------------------------------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> CompactionResultData:
        """Pi's own ``/compact`` (Pi's model writes the summary); see :meth:`compact_with` for a
        summary of yours."""
        command: dict[str, Any] = {"type": "compact"}
        if custom_instructions is not None:
            command["customInstructions"] = custom_instructions
        return cast(CompactionResultData, await self.request(command))

    async def bash(self, command: str, *, exclude_from_context: bool = False) -> BashResultData:
        record: dict[str, Any] = {"type": "bash", "command": command}
        if exclude_from_context:
            record["excludeFromContext"] = True
        return cast(BashResultData, await self.request(record))

    async def abort_bash(self) -> None:
        await self.request({"type": "abort_bash"})

    # -- the session ------------------------------------------------------------------------------

    async def get_entries(self, since: str | None = None) -> EntriesData:
        """Pi's entries in append order (all branches), or those after entry ``since`` (an id
        is a cursor that survives reconnecting), and Pi's leaf id."""
        command: dict[str, Any] = {"type": "get_entries"}
        if since is not None:
            command["since"] = since
        return cast(EntriesData, await self.request(command))

    async def get_tree(self) -> TreeData:
        return cast(TreeData, await self.request({"type": "get_tree"}))

    async def get_leaf_id(self) -> str | None:
        """Pi's current leaf (from ``get_entries``)."""
        return (await self.get_entries())["leafId"]

    async def get_session_stats(self) -> SessionStatsData:
        return cast(SessionStatsData, await self.request({"type": "get_session_stats"}))

    async def export_html(self, output_path: str | os.PathLike[str] | None = None) -> str:
        """Pi's HTML export; returns the path written."""
        command: dict[str, Any] = {"type": "export_html"}
        if output_path is not None:
            command["outputPath"] = os.fspath(output_path)
        data = await self.request(command)
        return cast(str, data["path"])

    async def switch_session(self, session_path: str | os.PathLike[str]) -> CancelledData:
        """Make Pi load a session file (the same one reloads it)."""
        return cast(
            CancelledData,
            await self.request({"type": "switch_session", "sessionPath": os.fspath(session_path)}),
        )

    async def new_session(self, parent_session: str | None = None) -> CancelledData:
        command: dict[str, Any] = {"type": "new_session"}
        if parent_session is not None:
            command["parentSession"] = parent_session
        return cast(CancelledData, await self.request(command))

    async def fork(self, entry_id: str) -> ForkData:
        """A new session from before user message ``entry_id``; its text comes back."""
        return cast(ForkData, await self.request({"type": "fork", "entryId": entry_id}))

    async def clone(self) -> CancelledData:
        return cast(CancelledData, await self.request({"type": "clone"}))

    async def get_fork_messages(self) -> list[dict[str, str]]:
        data = await self.request({"type": "get_fork_messages"})
        return cast("list[dict[str, str]]", data["messages"])

    async def get_last_assistant_text(self) -> str | None:
        data = await self.request({"type": "get_last_assistant_text"})
        return cast("str | None", data["text"])

    async def set_session_name(self, name: str) -> None:
        await self.request({"type": "set_session_name", "name": name})

    async def send_ui_response(self, response: Mapping[str, Any]) -> None:
        """Answer an ``extension_ui_request`` event (``{"type": "extension_ui_response", "id",
        "value" | "confirmed" | "cancelled"}``); Pi sends no response to it."""
        stdin = self._process.stdin
        assert stdin is not None
        async with self._write_lock:
            stdin.write(encode_record({"type": "extension_ui_response", **response}))
            await stdin.drain()

    # -- edits Pi takes up ------------------------------------------------------------------------

    def handoff(self) -> Handoff:
        """Edit Pi's session with a :class:`~pisession.SessionManager` while Pi runs; Pi takes
        the edit up when the block ends::

            async with client.handoff() as manager:
                manager.navigate_tree(target_id, summarize=my_summarizer)
            # Pi now stands at the branch summary pisession wrote

        Waits until Pi is idle, holds this client's other commands back, and on exit makes Pi
        reload its file (``switch_session``) and checks that Pi's leaf is the manager's. A write
        the client did not make meanwhile raises :class:`HandoffError` (see :meth:`edit` to
        have the edit redone instead).
        """
        from ._handoff import Handoff

        return Handoff(self)

    async def edit(self, edit: Callable[[SessionManager], Awaitable[Any] | Any], *, attempts: int = 3) -> Any:
        """Run ``edit(manager)`` in a :meth:`handoff`; if something else wrote to the session
        meanwhile, run it again on top of that write (up to ``attempts`` times, then
        :class:`HandoffError`). ``edit`` may be an ``async def``; its result is returned::

            await client.edit(lambda manager: manager.append_label_change(entry_id, "keep"))
        """
        from ._handoff import run_edit

        return await run_edit(self, edit, attempts)

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: Summarizer | AsyncSummarizer | None = None,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
        attempts: int = 3,
    ) -> Navigation:
        """Pi's ``/tree`` navigation done by pisession and taken up by Pi: with ``summarize``
        (sync or ``async def``), the branch left is summarized into a ``branch_summary`` at the
        target::

            nav = await client.navigate_tree(entry_id, summarize=my_summarizer, label="retry")

        The thinking level and context window are Pi's current model's. Redone on top of a write
        the client did not make (see :meth:`edit`).
        """
        from ._handoff import navigate

        return await navigate(
            self,
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
            attempts=attempts,
        )

    async def compact_with(
        self,
        summarize: Summarizer | AsyncSummarizer,
        *,
        custom_instructions: str | None = None,
        settings: CompactionSettings | None = None,
        attempts: int = 3,
    ) -> CompactionEntry:
        """Compact Pi's session with a summary of yours (Pi's cut point and prompts, your
        model), taken up by Pi::

            entry = await client.compact_with(my_summarizer)

        ``settings`` default to Pi's own (``settings.json`` of the agent folder in Pi's
        environment and of a trusted project). Redone on top of a write the client did not
        make (see :meth:`edit`).
        """
        from ._handoff import compact

        return await compact(
            self, summarize, custom_instructions=custom_instructions, settings=settings, attempts=attempts
        )
