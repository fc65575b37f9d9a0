"""The stdio adapter: newline-delimited JSON-RPC on stdin/stdout around the Core.

Synchronous on purpose: one `select` + `os.read` loop with a large buffer and one write per
batch of lines is the fastest thing Python can do here, and it makes "exit promptly on EOF"
(STDIO-10) trivial. stdout carries only protocol messages (STDIO-03); nothing is logged.
Open listen streams are polled for store changes while stdin is idle, and each gets a
SubscriptionsListenResult when the server shuts down (SUB-08).
"""

from __future__ import annotations

import os
import select
import signal
from typing import Final

from mcp_tempest.targets.reference.core import Core
from mcp_tempest.targets.reference.subscriptions import POLL_INTERVAL_S, id_key

READ_SIZE: Final = 1 << 20
MAX_LINE: Final = 64 << 20


class _Out:
    """Buffered writes to fd 1, flushed once per batch of handled lines."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.parts: list[bytes] = []

    def line(self, data: bytes) -> None:
        self.parts.append(data)
        self.parts.append(b"\n")

    def flush(self) -> None:
        if not self.parts:
            return
        view = memoryview(b"".join(self.parts))
        self.parts.clear()
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


class _Stop(Exception):
    pass


def _on_signal(_signum: int, _frame: object) -> None:
    raise _Stop


def serve_stdio(core: Core, *, stdin_fd: int = 0, stdout_fd: int = 1) -> int:
    """Serve until stdin reaches EOF or SIGTERM/SIGINT arrives; returns the exit status (0)."""
    out = _Out(stdout_fd)
    hub = core.hub
    stdout_log = "stdout-log" in core.bugs
    exit_on_blank = "exit-on-newline" in core.bugs
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    pending: list[bytes] = []
    pending_len = 0
    core.pending_ids = in_flight = set()  # ids answered in this batch, not yet written (RPC-05)
    skipping = False  # inside an over-long line we already answered with a parse error
    try:
        while True:
            if hub.active:
                ready, _, _ = select.select([stdin_fd], [], [], POLL_INTERVAL_S)
                if not ready:
                    hub.poll()
                    out.flush()
                    continue
            chunk = os.read(stdin_fd, READ_SIZE)
            if not chunk:
                break
            start = 0
            while True:
                cut = chunk.find(b"\n", start)
                if cut < 0:
                    if not skipping:
                        pending.append(chunk[start:])
                        pending_len += len(chunk) - start
                        if pending_len > MAX_LINE:
                            pending, pending_len, skipping = [], 0, True
                            out.line(core.frame_too_large().body or b"")
                    break
                if skipping:
                    skipping = False
                    start = cut + 1
                    continue
                if pending:
                    pending.append(chunk[start:cut])
                    line = b"".join(pending)
                    pending, pending_len = [], 0
                else:
                    line = chunk[start:cut]
                start = cut + 1
                if line.endswith(b"\r"):
                    line = line[:-1]
                if not line.strip():
                    if exit_on_blank:
                        raise _Stop  # the `exit-on-newline` bug: a blank line taken for EOF
                    continue
                reply = core.handle_message(line)
                if stdout_log:
                    out.line(b"[reference] handled one message")
                if reply.notes:
                    for note in reply.notes:
                        out.line(note)
                if reply.body is not None:
                    out.line(reply.body)
                for note in reply.after or ():
                    out.line(note)
                if reply.listen is not None:
                    listen = reply.listen
                    listen.send = out.line
                    hub.add(id_key(listen.request_id), listen)
                elif reply.cancelled is not None:
                    hub.remove(reply.cancelled)  # cancelled: nothing more for it (STDIO-09)
                if hub.active:
                    hub.poll()
            out.flush()
            if not pending_len:
                # A line still arriving was written with the ones just answered: keep their ids.
                in_flight.clear()
    except _Stop:
        pass
    except BrokenPipeError:
        return 0
    try:
        for listen in hub.drain():
            out.line(listen.closing_result())
        out.flush()
    except OSError:
        pass
    return 0

