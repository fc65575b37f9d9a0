"""The `{server}` command of a stdio client campaign: `python -m mcp_tempest.fuzz.client.stub CASE LOGDIR`.

The client under test launches this process as its MCP server. It plays the case in CASE (a
`ClientCase` JSON file) on stdin/stdout, one frame per line, and logs every frame both ways to
LOGDIR/proc-<k>.jsonl as transcript events (k counts the stub processes of one run, so a client
that restarts its server shows up as processes 1, 2, ...). Each event line is flushed as it
happens: a client that kills its server still leaves the log of what it saw. Exits on stdin EOF.
"""

from __future__ import annotations

import hashlib
import os
import queue
import signal
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
#: Client frames recorded per server process (or HTTP instance); later ones are read, answered and counted.
MAX_FRAMES = 1000
#: Of those, frames that are not JSON: at most NOISE_EVENT_CAP, each cut to NOISE_KEEP_BYTES. The
#: numbers a server's stdout noise is held to (targets.connection, targets.stdio_driver), stated
#: again rather than imported: this module starts for every stdio client run, and those cost 0.1 s.
NOISE_EVENT_CAP = 64
NOISE_KEEP_BYTES = 4096


def noise_excerpt(raw: bytes) -> tuple[bytes, str]:
    """(what is kept of a client frame that is not JSON, a note saying what was cut: "" for none).

    Kept whole up to NOISE_KEEP_BYTES; a longer frame keeps its first bytes, and the note gives
    its length and a digest, so two floods can still be told apart. The excerpt keeps the whole
    frame's UTF-8 verdict, which RPC-02 reads from it: the cut falls on a character boundary,
    and bytes that are not UTF-8 past the cut are appended (the note says where they were)."""
    if len(raw) <= NOISE_KEEP_BYTES:
        return raw, ""
    digest = hashlib.sha256(raw).hexdigest()[:16]
    try:
        raw.decode("utf-8")
        bad: tuple[int, int] | None = None
    except UnicodeDecodeError as exc:
        bad = (exc.start, exc.end)
    if bad is not None and bad[0] < NOISE_KEEP_BYTES:
        head = raw[:max(NOISE_KEEP_BYTES, bad[1])]
        return head, f"{len(raw)} bytes, sha256 {digest}...; the first {len(head)} kept"
    head = raw[:NOISE_KEEP_BYTES].decode("utf-8", "ignore").encode()  # UTF-8 so far: drop a cut character
    note = f"{len(raw)} bytes, sha256 {digest}...; the first {len(head)} kept"
    if bad is not None:
        head += raw[bad[0]:bad[1]]
        note += f", then bytes {bad[0]}-{bad[1] - 1}, the first that are not UTF-8"
    return head, note


class Recording:
    """What one server process (or HTTP instance) records of its client, within the caps above:
    a client is as hostile as a server may be, and what it sends is kept in memory, in repro
    files and in reports. Every frame is still read and answered; one past a cap is counted,
    and `summary` says what was cut."""

    def __init__(self) -> None:
        self.bytes = 0
        self.frames = 0
        self.noise = 0
        self.stopped = ""  # why no more frames are recorded ("" while they are)
        self.cut_frames = self.cut_bytes = self.cut_noise = 0

    def frame(self, kind: str, size: int, sent: int) -> bool | str:
        """Whether a client frame is recorded (`size`: its bytes as recorded; `sent`: as the client
        sent them): True, or False when it is only counted, or the note of the one event that
        says recording stops here."""
        if not self.stopped and self.bytes + size > LOG_CAP:
            self.stopped = f"the log is full ({LOG_CAP} bytes)"
        elif not self.stopped and self.frames >= MAX_FRAMES:
            self.stopped = f"{MAX_FRAMES} client frames were recorded"
        else:
            if self.stopped or (kind == "noise" and self.noise >= NOISE_EVENT_CAP):
                self.cut_frames += 1
                self.cut_bytes += sent
                self.cut_noise += kind == "noise"
                return False
            self.frames += 1
            self.noise += kind == "noise"
            self.bytes += size
            return True
        self.cut_frames += 1
        self.cut_bytes += sent
        return f"{self.stopped}: what the client sent after this is counted, not recorded"

    def other(self, size: int) -> bool:
        """Whether an event that is no client frame (an answer, an HTTP status) is recorded."""
        if self.stopped or self.bytes + size > LOG_CAP:
            return False
        self.bytes += size
        return True

    def summary(self) -> str | None:
        """The note of the last event: how much was read and answered but not recorded, and why."""
        if not self.cut_frames:
            return None
        why = [self.stopped] if self.stopped else []
        if self.cut_noise:
            why.append(f"{self.cut_noise} of them not JSON, past the {NOISE_EVENT_CAP} such frames recorded")
        return (f"not recorded: {self.cut_frames} more client frames ({self.cut_bytes} bytes as sent), read and "
                f"answered as usual: {'; '.join(why)}")


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
        self.recording = Recording()
        self.recorded: set[int] = set()  # client frames recorded (MAX_FRAMES at most): their answers are too

    def add(self, kind: str, **fields: Any) -> int:
        """Record an event (within `Recording`'s caps); its sequence number either way. A client
        frame's raw, when not JSON, is kept as `noise_excerpt` says; an answer (`ref`) is
        recorded when the frame it answers was."""
        self.seq += 1
        sent = len(fields.get("raw") or b"")
        if kind == "noise" and fields.get("raw"):
            fields["raw"], cut = noise_excerpt(fields["raw"])
            fields["note"] = "; ".join(n for n in (fields.get("note"), cut) if n)
        data: dict[str, Any] = Event(kind, time.monotonic(), proc=self.proc, **fields).to_json()  # type: ignore[arg-type]
        data["t"] = time.monotonic()  # absolute: the runner merges several logs by it
        data["seq"] = self.seq
        line = orjson.dumps(data) + b"\n"
        if kind in ("recv", "noise", "oversize"):
            admitted = self.recording.frame(kind, len(line), sent)
            if isinstance(admitted, str):
                self._note(admitted)
            if admitted is not True:
                return self.seq
            self.recorded.add(self.seq)
        elif (fields.get("ref") is not None and fields["ref"] not in self.recorded) \
                or not self.recording.other(len(line)):
            return self.seq
        self.out.write(line)
        return self.seq

    def _note(self, note: str) -> None:
        self.out.write(orjson.dumps({"kind": "error", "t": time.monotonic(), "proc": self.proc, "seq": self.seq,
                                     "note": note}) + b"\n")

    def finish(self) -> None:
        """Say what was cut (once): at the end of the run, or when the run ends this process."""
        summary = self.recording.summary()
        if summary:
            self.seq += 1
            self._note(summary)
            self.recording.cut_frames = 0


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

    def ended(signum: int, _frame: Any) -> None:  # the runner ends the client's group at the end of a run
        log.finish()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, ended)
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
                log.finish()
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
        log.finish()
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
