"""The `{server}` command of a stdio client campaign: `python -m mcp_tempest.fuzz.client.stub CASE LOGDIR`.

The client under test launches this process as its MCP server. It plays the case in CASE (a
`ClientCase` JSON file) on stdin/stdout, one frame per line, and logs every frame both ways to
LOGDIR/proc-<k>.jsonl as transcript events (k counts the stub processes of one run, so a client
that restarts its server shows up as processes 1, 2, ...). Each event line is flushed as it
happens: a client that kills its server still leaves the log of what it saw. Exits on stdin EOF.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from mcp_tempest.fuzz.client.case import ClientCase
from mcp_tempest.fuzz.client.script import Outgoing, ScriptedServer
from mcp_tempest.targets.transcript import Event

#: The longest client frame kept; a longer line is logged as `oversize` with its length, and skipped.
LINE_CAP = 4 * 1024 * 1024
#: Each server process's log stops growing here (a client flooding its server costs no more disk).
LOG_CAP = 16 * 1024 * 1024
#: A client that restarts its server more often than this in one run gets no more servers.
MAX_PROCESSES = 32


def _claim_log(log_dir: Path) -> tuple[int, IO[bytes]]:
    for k in range(1, MAX_PROCESSES + 1):
        try:
            fd = os.open(log_dir / f"proc-{k}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        return k, os.fdopen(fd, "wb", buffering=0)
    raise SystemExit("stub: too many server processes in one run")


class _Log:
    def __init__(self, out: IO[bytes], proc: int) -> None:
        self.out = out
        self.proc = proc
        self.seq = 0
        self.written = 0
        self.full = False

    def add(self, kind: str, **fields: Any) -> int:
        self.seq += 1
        if self.full:
            return self.seq
        data: dict[str, Any] = Event(kind, time.monotonic(), proc=self.proc, **fields).to_json()  # type: ignore[arg-type]
        data["t"] = time.monotonic()  # absolute: the runner merges several logs by it
        data["seq"] = self.seq
        line = orjson.dumps(data) + b"\n"
        if self.written + len(line) > LOG_CAP:
            self.full = True
            line = orjson.dumps({"kind": "error", "t": time.monotonic(), "proc": self.proc, "seq": self.seq,
                                 "note": f"the log of this server process is full ({LOG_CAP} bytes): "
                                         "what the client sent after this is not recorded"}) + b"\n"
        self.out.write(line)
        self.written += len(line)
        return self.seq


def read_lines(stdin: IO[bytes]) -> Iterator[bytes | None]:
    """The client's lines, each at most LINE_CAP bytes; a longer one is given as None (at once,
    so it shows even when it never ends) and the rest of it is read and dropped."""
    while True:
        line = stdin.readline(LINE_CAP + 1)
        if not line:
            return
        if len(line) <= LINE_CAP or line.endswith(b"\n"):
            yield line
            continue
        yield None
        while line and not line.endswith(b"\n"):
            line = stdin.readline(1024 * 1024)


def serve(case: ClientCase, log_dir: Path, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    proc, out = _claim_log(log_dir)
    log = _Log(out, proc)
    server = ScriptedServer(case)
    log.add("spawn", note=" ".join(sys.argv))
    lines: queue.Queue[bytes | None | bool] = queue.Queue(maxsize=8)  # bounded (8 lines of LINE_CAP at most): a flood waits

    def read() -> None:
        for line in read_lines(stdin):
            lines.put(False if line is None else line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    held: list[tuple[list[Outgoing], int]] = []
    deadline = 0.0

    def write(outs: list[Outgoing], ref: int) -> None:
        for o in outs:
            stdout.write(o.raw + b"\n")
            stdout.flush()
            log.add("send", message=o.message, raw=o.raw, note=o.note, ref=ref)

    try:
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()) if held else None)
            except queue.Empty:
                for outs, ref in held:
                    write(outs, ref)
                held = []
                continue
            if line is None:
                for outs, ref in held:
                    write(outs, ref)
                log.add("closed", note="client closed stdin")
                return 0
            if line is False:
                log.add("oversize", note=f"a client line longer than {LINE_CAP} bytes: not read")
                continue
            body = line[:-1] if line.endswith(b"\n") else line
            try:
                message = orjson.loads(body)
            except orjson.JSONDecodeError:
                message = None
            ref = log.add("recv" if message is not None else "noise", message=message, raw=body)
            outs = server.answer(message)
            if outs and outs[0].hold > 0 and not held:
                held = [(outs, ref)]
                deadline = time.monotonic() + outs[0].hold
                continue
            write(outs, ref)
            for h_outs, h_ref in held:
                write(h_outs, h_ref)
            held = []
    except BrokenPipeError:
        log.add("closed", note="client closed stdout")
        return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m mcp_tempest.fuzz.client.stub CASE.json LOGDIR", file=sys.stderr)
        return 2
    case = ClientCase.from_json(orjson.loads(Path(argv[0]).read_bytes()))
    return serve(case, Path(argv[1]), sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
