"""The `{server}` command of a stdio client campaign: `python -m fuzz.client.stub CASE LOGDIR`.

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
from pathlib import Path
from typing import IO, Any

import orjson

from fuzz.client.case import ClientCase
from fuzz.client.script import Outgoing, ScriptedServer
from targets.transcript import Event


def _claim_log(log_dir: Path) -> tuple[int, IO[bytes]]:
    for k in range(1, 1000):
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

    def add(self, kind: str, **fields: Any) -> int:
        self.seq += 1
        data: dict[str, Any] = Event(kind, time.monotonic(), proc=self.proc, **fields).to_json()  # type: ignore[arg-type]
        data["t"] = time.monotonic()  # absolute: the runner merges several logs by it
        data["seq"] = self.seq
        self.out.write(orjson.dumps(data) + b"\n")
        return self.seq


def serve(case: ClientCase, log_dir: Path, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    proc, out = _claim_log(log_dir)
    log = _Log(out, proc)
    server = ScriptedServer(case)
    log.add("spawn", note=" ".join(sys.argv))
    lines: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        for line in iter(stdin.readline, b""):
            lines.put(line)
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
        print("usage: python -m fuzz.client.stub CASE.json LOGDIR", file=sys.stderr)
        return 2
    case = ClientCase.from_json(orjson.loads(Path(argv[0]).read_bytes()))
    return serve(case, Path(argv[1]), sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
