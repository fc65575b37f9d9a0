"""The stdio driver: one server process, newline-delimited frames, every byte recorded.

Reading happens in the caller's thread (poll + non-blocking reads): no reader thread to leak, and
the transcript's order is the order the harness saw things. Lines longer than the cap are
counted and thrown away as they stream past, so a server that writes 100 MB without a newline
costs a counter, not 100 MB of memory. Writes are non-blocking too and keep reading stdout while
they wait: a server that stops reading stdin because its stdout is full cannot deadlock us.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from mcp_tempest.targets import stop_request, wire
from mcp_tempest.targets.connection import (
    DEFAULT_LINE_CAP,
    DEFAULT_TIMEOUT,
    NOISE_KEEP_BYTES,
    Connection,
    Event,
    Frame,
    Predicate,
    frame_bytes_and_message,
    next_proc,
)
from mcp_tempest.targets.fork_server import ForkOrder, ForkServer, end_process, start_fork_server
from mcp_tempest.targets.processes import ManagedProcess, SpawnError, spawn
from mcp_tempest.targets.target_spec import TargetSpec
from mcp_tempest.targets.transcript import ERA_OPEN_NOTE, REUSED_NOTE, Transcript, parse_received
from mcp_tempest.targets.transports import STDIO

READ_CHUNK: Final = 1024 * 1024
OVERSIZE_HEAD: Final = 256
DEFAULT_CLOSE_GRACE: Final = 1.0
# Non-JSON stdout lines recorded per process; past these, lines are counted and reported once
# (a server printing noise in a loop must cost a counter, not one event per line).
NOISE_EVENT_CAP: Final = 64
NOISE_BYTE_CAP: Final = 256 * 1024
_STOP_SLICE: Final = 0.25  # seconds a wait for the target polls before it looks for a stop request
_POLL_IN: Final = select.POLLIN | select.POLLHUP | select.POLLERR
_POLL_OUT: Final = select.POLLOUT | select.POLLERR | select.POLLHUP


class StdioConnection(Connection):
    """A started server process spoken to over its stdin/stdout.

    Records: `spawn` on attach; `send` per frame; `recv` per JSON line; `noise` per non-JSON
    line; `oversize` per line over `line_cap` (note: its length); `closed` at stdout EOF;
    `timeout` when an awaited event did not come; `error` on a broken pipe; and on close
    `exit` (status; note says how it ended) and `stderr` (the tail, when there is any).
    """

    transport = STDIO

    def __init__(
        self,
        transcript: Transcript,
        process: ManagedProcess,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        line_cap: int = DEFAULT_LINE_CAP,
        close_grace: float = DEFAULT_CLOSE_GRACE,
        note: str = "",
    ) -> None:
        super().__init__(transcript, timeout=timeout)
        if process.popen.stdin is None or process.popen.stdout is None:
            raise ValueError("a stdio connection needs a process started with pipes")
        self.process = process
        self.line_cap = line_cap
        self.close_grace = close_grace
        self._out_fd = process.popen.stdout.fileno()
        self._read_into = bytearray(READ_CHUNK)
        self._in_fd: int | None = process.popen.stdin.fileno()
        os.set_blocking(self._out_fd, False)
        os.set_blocking(self._in_fd, False)
        self._poll = select.poll()
        self._poll.register(self._out_fd, _POLL_IN)
        self._buf = bytearray()
        self._discarding = False
        self._discard_len = 0
        self._discard_head = b""
        self._eof = False
        self._closed = False
        self._noise_events = 0
        self._noise_bytes = 0
        self._noise_dropped = 0
        self._noise_dropped_bytes = 0
        # A shared connection (Target.connect(fresh=False)) outlives each user: close() only
        # detaches, and terminate() really ends it.
        self.shared = False
        # What a rebind carries from case to case: ids still owed, and whether an earlier case
        # sent a frame claiming no modern era (ERA_OPEN_NOTE).
        self._carried: list[Any] = []
        self._era_open = False
        self.proc = next_proc(transcript)
        self._record("spawn", proc=self.proc, note=note or shlex.join(process.argv))

    # --- identity ---

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pgid(self) -> int:
        return self.process.pgid

    @property
    def exit_status(self) -> int | None:
        return self.process.exit_status()

    def rebind(self, transcript: Transcript, note: str = "") -> None:
        """Attach this (still running) process to another transcript, as a new process number there.

        The spawn note lists the ids still unanswered on this process (`outstanding=[...]`): a late
        reply to an earlier case can only carry one of those, so any other unexplained id is this
        case's finding, not a leftover."""
        self._carried = _unanswered_ids(self.transcript, self.proc, self._carried)
        self._era_open = self._era_open or _sent_unclaimed_era(self.transcript, self.proc)
        if not note:
            era = f" {ERA_OPEN_NOTE}" if self._era_open else ""
            note = (f"{shlex.join(self.process.argv)} {REUSED_NOTE}{era} "
                    f"outstanding={orjson.dumps(self._carried[-64:]).decode()}")
        self.transcript = transcript
        self._procs = set()
        self._last_send = None
        self._first_event = len(transcript.events)
        self.proc = next_proc(transcript)
        self._record("spawn", proc=self.proc, note=note)

    # --- writing ---

    def send(self, frame: Frame, *, headers: dict[str, str] | None = None) -> int:
        """Write one frame: a dict becomes one line; bytes go out exactly as given (no newline added).

        `headers` has no meaning on stdio and is ignored. Returns once the bytes are written or
        the write stalled for `timeout` (recorded as `timeout`), or the pipe broke (`error`).
        """
        if isinstance(frame, dict):
            raw, message = wire.encode_line(frame), frame
        else:
            raw, message = frame_bytes_and_message(frame)
        index = self._record("send", proc=self.proc, message=message, raw=raw)
        self._last_send = index
        self._write(raw, self._deadline(self.timeout))
        return index

    def send_concurrently(
        self,
        frames: Sequence[Frame],
        *,
        headers: Sequence[dict[str, str] | None] | None = None,
        timeout: float | None = None,
    ) -> list[int]:
        """Write every frame before reading any answer: on stdio that is what "in flight" means.

        The frames go out in one write, so a server reading its input in chunks sees them
        together (one `send` event per frame is still recorded, in order).
        """
        indices: list[int] = []
        chunks: list[bytes] = []
        for frame in frames:
            if isinstance(frame, dict):
                raw, message = wire.encode_line(frame), frame
            else:
                raw, message = frame_bytes_and_message(frame)
            indices.append(self._record("send", proc=self.proc, message=message, raw=raw))
            chunks.append(raw)
        if indices:
            self._write(b"".join(chunks), self._deadline(self.timeout if timeout is None else timeout))
            self._last_send = indices[0]
        return indices

    def _write(self, raw: bytes, deadline: float) -> None:
        if self._in_fd is None:
            self._record("error", proc=self.proc, note="stdin already closed; frame not written")
            return
        view = memoryview(raw)
        written = 0
        while written < len(raw):
            try:
                written += os.write(self._in_fd, view[written:])
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                self._record(
                    "error", proc=self.proc,
                    note=f"broken pipe: the server closed its stdin ({written} of {len(raw)} bytes written)",
                )
                self._close_stdin()
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._record(
                    "timeout", proc=self.proc,
                    note=f"write stalled: {written} of {len(raw)} bytes written (server not reading stdin)",
                )
                return
            poller = select.poll()
            poller.register(self._in_fd, _POLL_OUT)
            if not self._eof:
                poller.register(self._out_fd, _POLL_IN)
            for fd, _ in poller.poll(_ms(min(remaining, 0.05))):
                if fd == self._out_fd:
                    self._read_available()

    def close_stdin(self) -> None:
        """Close the server's stdin (EOF) without ending the connection: STDIO-10's first step."""
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self._in_fd is not None and self.process.popen.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.popen.stdin.close()
        self._in_fd = None

    # --- reading ---

    def read_until(
        self, predicate: Predicate, timeout: float, *, since: int | None = None, awaited: str = ""
    ) -> Event | None:
        start = self._start_index(since)
        deadline = self._deadline(timeout)
        while True:
            event, start = self._scan(predicate, start)
            if event is not None:
                return event
            if self._eof:
                return None
            if time.monotonic() >= deadline:
                # `ref`: the send this wait was for, so the oracle reads the timeout, not its note.
                waited_for = since if since is not None else self._last_send
                self._record("timeout", proc=self.proc, ref=waited_for,
                             note=awaited or "an event matching the predicate")
                return None
            self._pump(deadline)

    def drain(self, quiet: float = 0.2, timeout: float = 2.0) -> list[Event]:
        start = len(self.transcript.events)
        deadline = self._deadline(timeout)
        while not self._eof and time.monotonic() < deadline:
            if not self._pump(min(deadline, time.monotonic() + quiet)):
                break
        return [e for e in self.transcript.events[start:] if self.mine(e)]

    def _pump(self, deadline: float) -> bool:
        """Wait until stdout is readable or `deadline`; read what is there. False on timeout."""
        if self._eof:
            return False
        # in slices, so a stop asked for by a signal (targets/stop_request.py) does not wait it out
        while True:
            remaining = deadline - time.monotonic()
            if self._poll.poll(_ms(min(max(remaining, 0.0), _STOP_SLICE))):
                break
            if remaining <= _STOP_SLICE:
                return False
            stop_request.wait_point()
        self._read_available()
        return True

    def _read_available(self) -> None:
        for _ in range(64):  # bounded: at most 64 MiB per call, then let the caller look
            try:
                size = os.readv(self._out_fd, [self._read_into])
            except BlockingIOError:
                return
            except OSError as exc:
                self._record("error", proc=self.proc, note=f"reading stdout failed: {exc.strerror or exc}")
                self._on_eof()
                return
            if not size:
                self._on_eof()
                return
            self._feed(self._read_into, size)
            if size < READ_CHUNK:
                return

    def _feed(self, chunk: bytes | bytearray, size: int) -> None:
        """The first `size` bytes of `chunk`, split into lines. `chunk` is the connection's one read
        buffer: reads of every length land in it, so a huge line read in many partial reads
        allocates nothing per read (a bytes per read leaves the allocator with buffers of as many
        sizes; the 256 MiB-line test once saw the harness at 327 MB on a loaded CI machine)."""
        cap = self.line_cap
        pos = 0
        view = memoryview(chunk)
        while pos < size:
            nl = chunk.find(b"\n", pos, size)
            end = size if nl == -1 else nl
            if self._discarding:
                self._discard_len += end - pos
            elif len(self._buf) + (end - pos) > cap:
                self._discarding = True
                head = bytes(self._buf[:OVERSIZE_HEAD])
                if len(head) < OVERSIZE_HEAD:
                    head += chunk[pos : min(size, pos + OVERSIZE_HEAD - len(head))]
                self._discard_head = head
                self._discard_len = len(self._buf) + (end - pos)
                self._buf.clear()
            else:
                self._buf += view[pos:end]
            if nl == -1:
                return
            pos = nl + 1
            if self._discarding:
                self._record_oversize(terminated=True)
            else:
                line = bytes(self._buf)
                self._buf.clear()
                self._on_line(line)

    def _record_oversize(self, *, terminated: bool) -> None:
        how = "" if terminated else ", unterminated when stdout closed"
        self._record(
            "oversize", proc=self.proc, raw=self._discard_head,
            note=f"{self._discard_len} bytes (cap {self.line_cap}){how}",
        )
        self._discarding = False
        self._discard_len = 0
        self._discard_head = b""

    def _on_line(self, line: bytes, note: str = "") -> None:
        try:
            message = parse_received(line, line=True)  # a list page held already is not parsed again
        except wire.DecodeError as exc:
            if self._noise_events >= NOISE_EVENT_CAP or self._noise_bytes >= NOISE_BYTE_CAP:
                self._noise_dropped += 1
                self._noise_dropped_bytes += len(line) + 1
                return
            reason = "empty line" if not line.strip() else exc.reason
            if len(line) > NOISE_KEEP_BYTES:
                reason += f" ({len(line)} bytes, first {NOISE_KEEP_BYTES} kept)"
            self._noise_events += 1
            self._noise_bytes += min(len(line), NOISE_KEEP_BYTES)
            self._record("noise", proc=self.proc, raw=line[:NOISE_KEEP_BYTES], note=_join(reason, note))
            return
        self._record("recv", proc=self.proc, message=message, raw=line, note=note)

    def _on_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        with contextlib.suppress(KeyError, ValueError):
            self._poll.unregister(self._out_fd)
        if self._discarding:
            self._record_oversize(terminated=False)
        elif self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            self._on_line(line, note="unterminated line at EOF")
        self._report_dropped_noise()
        self._record("closed", proc=self.proc, note="stdout closed")

    def _report_dropped_noise(self) -> None:
        """Once per process: how much non-JSON output went past the cap unrecorded."""
        if self._noise_dropped:
            self._record(
                "noise", proc=self.proc, raw=b"",
                note=f"{self._noise_dropped} more non-JSON lines ({self._noise_dropped_bytes} bytes) not recorded: "
                f"cap of {NOISE_EVENT_CAP} noise events per process reached",
            )
            self._noise_dropped = self._noise_dropped_bytes = 0

    # --- state and ending ---

    def alive(self) -> bool:
        if self._closed or self._eof:
            return False
        if not self.process.running():
            return False
        # Pick up an EOF that is already waiting, so a dead-but-unread pipe does not look alive.
        if self._poll.poll(0):
            self._read_available()
        return not self._eof

    def close(self) -> None:
        """Close stdin, collect what the server still says, reap the group, record exit and stderr
        (a shared connection only detaches; see `terminate`)."""
        if self.shared:
            return
        self.terminate()

    def terminate(self) -> None:
        """End the process even when the connection is shared; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._eof:
            # Stdout closed first (a crash, or STDIO-10's "close stdout and exit"): give the
            # exit a moment to land so it is not mistaken for a reaction to our stdin EOF.
            self.process.wait_exit(0.2)
        exited_before = self.process.exit_status() is not None
        try:
            self._close_stdin()
            deadline = self._deadline(self.close_grace)
            while not self._eof and time.monotonic() < deadline:
                if not self._pump(deadline) and self.process.exit_status() is not None:
                    break
            self.process.reap(grace=max(deadline - time.monotonic(), 0.0), term_grace=1.0)
            # Whatever the group wrote before it died is still in the pipe.
            end = self._deadline(0.2)
            while not self._eof and time.monotonic() < end:
                self._pump(end)
        finally:
            if not self.process.reaped:
                self.process.reap(grace=0.0, term_grace=0.2)
            self._report_dropped_noise()
            status = self.process.exit_status()
            ended = _ended_note(self.process.ended_by, exited_before, self.close_grace)
            self._record("exit", proc=self.proc, status=status, note=ended)
            tail = self.process.stderr_tail()
            if tail:
                self._record("stderr", proc=self.proc, raw=tail)
            self.process.close_log()
            self.process.close_pipes()

    def kill(self) -> None:
        """SIGKILL the group now (a crash test's "the process died"), then close as usual."""
        self.process.signal_group(signal.SIGKILL)
        self.terminate()


def _ended_note(ended_by: str, exited_before: bool, grace: float) -> str:
    if exited_before:
        return "exited by itself"
    if ended_by in ("self", "eof"):
        return "exited after stdin was closed"
    if ended_by == "SIGTERM":
        return f"still running {grace:g} s after stdin was closed; ended by SIGTERM to its group"
    return "ended by SIGKILL to its group"


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a and b else a or b


def _ms(seconds: float) -> int:
    return max(int(seconds * 1000 + 0.999), 0)


def start_stdio(
    transcript: Transcript,
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    line_cap: int = DEFAULT_LINE_CAP,
    close_grace: float = DEFAULT_CLOSE_GRACE,
    env: Mapping[str, str] | None = None,
    isolate_network: bool = False,
) -> StdioConnection:
    """Start `argv` now and attach a connection; raises SpawnError when it cannot start."""
    process = spawn(argv, env=env, isolate_network=isolate_network)
    return StdioConnection(transcript, process, timeout=timeout, line_cap=line_cap, close_grace=close_grace)


class StdioPool:
    """Keeps the next fresh processes already started, so a fresh process per example costs no wait.

    `take()` hands out the oldest spare (Popen returns at once; the server's start-up then
    overlaps with the current example) and starts a replacement. Spares never handed out are
    reaped by `close()`.
    """

    def __init__(
        self,
        spec: TargetSpec | Sequence[str],
        size: int = 1,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        line_cap: int = DEFAULT_LINE_CAP,
        close_grace: float = DEFAULT_CLOSE_GRACE,
        env: Mapping[str, str] | None = None,
        fork_server: bool = True,
    ) -> None:
        self.argv = list(spec.argv if isinstance(spec, TargetSpec) else spec)
        if isinstance(spec, TargetSpec) and spec.kind != "stdio":
            raise ValueError(f"StdioPool needs a stdio: target, got {spec.text!r}")
        self.size = max(size, 0)
        self.timeout = timeout
        self.line_cap = line_cap
        self.close_grace = close_grace
        self.env = env
        self._spares: deque[ManagedProcess | ForkOrder] = deque()
        self._closed = False
        self.taken = 0
        # A Python target's fresh processes come from a fork server (targets/fork_server.py),
        # started on first need; `fork_note` says why not when it was wanted but refused.
        self._want_fork = fork_server
        self.isolate_network = isinstance(spec, TargetSpec) and spec.isolate_network
        self._forker: ForkServer | None = None
        self.fork_note = ""

    def _start(self) -> ManagedProcess | ForkOrder:
        """A process starting, or one asked of the fork server (whose pid is read when it is taken)."""
        if self._want_fork:
            self._want_fork = False
            self._forker, self.fork_note = start_fork_server(self.argv, self.env,
                                                             isolate_network=self.isolate_network)
        if self._forker is not None:
            try:
                return self._forker.order()
            except SpawnError as exc:
                self._fork_off(exc)
        return spawn(self.argv, env=self.env, isolate_network=self.isolate_network)

    def _started(self, spare: ManagedProcess | ForkOrder) -> ManagedProcess:
        if not isinstance(spare, ForkOrder):
            return spare
        try:
            return spare.process()
        except SpawnError as exc:
            self._fork_off(exc)
            return spawn(self.argv, env=self.env, isolate_network=self.isolate_network)

    def _fork_off(self, exc: SpawnError) -> None:
        self.fork_note = f"fork server off, spawning each process: {exc}"
        forker, self._forker = self._forker, None
        if forker is not None:
            forker.close()

    @property
    def forking(self) -> bool:
        """Whether fresh processes are forked from a zygote (False before the first spawn)."""
        return self._forker is not None

    def take(self, transcript: Transcript, *, refill: bool = True) -> StdioConnection:
        """A connection to a fresh process; raises SpawnError when the command cannot start.
        `refill=False` when this is the last one needed (no spare is started behind it)."""
        if self._closed:
            raise RuntimeError("StdioPool is closed")
        process = self._started(self._spares.popleft() if self._spares else self._start())
        self.taken += 1
        conn = StdioConnection(
            transcript, process, timeout=self.timeout, line_cap=self.line_cap, close_grace=self.close_grace
        )
        if refill:
            self.fill()
        return conn

    def fill(self) -> None:
        """Start spares until there are `size` of them (a failed start is left for `take` to report)."""
        while not self._closed and len(self._spares) < self.size:
            try:
                self._spares.append(self._start())
            except Exception:
                return

    def close(self) -> None:
        self._closed = True
        while self._spares:
            spare = self._spares.popleft()
            with contextlib.suppress(SpawnError):
                end_process(spare.process() if isinstance(spare, ForkOrder) else spare)
        if self._forker is not None:
            self._forker.close()
            self._forker = None

    def __enter__(self) -> StdioPool:
        self.fill()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _sent_unclaimed_era(transcript: Transcript, proc: int) -> bool:
    """Whether `proc` was sent a request or notification that claimed no modern era (see
    `wire.claims_modern_era`); frames that are not JSON-RPC messages at all open no era."""
    return any(e.kind == "send" and e.proc == proc and isinstance(e.message, dict) and "method" in e.message
               and not wire.claims_modern_era(e.message) for e in transcript.events)


def _unanswered_ids(transcript: Transcript, proc: int, carried: list[Any]) -> list[Any]:
    """The request ids sent on `proc` (plus `carried` from before) that no response has answered."""
    out = list(carried)
    for event in transcript.events:
        if event.proc != proc or not isinstance(event.message, dict) or "id" not in event.message:
            continue
        rid = event.message["id"]
        if event.kind == "send" and "method" in event.message:
            out.append(rid)
        elif event.kind == "recv" and "method" not in event.message:
            same = [i for i, v in enumerate(out) if type(v) is type(rid) and v == rid]
            if same:
                del out[same[0]]
    return out
