"""One client run per case: start the client under test against the scripted server, record it.

The client command is a template with `{server}` (stdio: replaced by the stub's command line,
which the client launches itself) or `{url}` (a fresh loopback Streamable HTTP instance served
by the harness for this run). The client is started and ended by the one owner of processes
(`targets.processes`, `targets.ownership`) as servers are: its own group, an owner tag its
daemons inherit, the parent-death signal and the guardian, so a client that leaves its server
(or a daemon) running leaves nothing behind, also when the harness is killed. Everything read
from it is bounded: stdout to STDOUT_CAP, stderr to the ring, the run to --timeout.

The transcript of a run, in the vocabulary of `targets.transcript` seen from the harness: `send`
is a frame the scripted server wrote (`ref` = the client frame it answers, `note` = "reply" or
"hostile:<probe>"), `recv` a frame the client wrote (`noise` when it was not JSON), `reading` a
JSON line the client printed about what it understood; proc 0 is the client, proc k >= 1 the
k-th server process it started (stdio) or the HTTP instance (1).
"""

from __future__ import annotations

import os
import selectors
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from mcp_tempest.fuzz.client import stub
from mcp_tempest.fuzz.client.case import ClientCase
from mcp_tempest.targets import ownership, processes
from mcp_tempest.targets.bounded_read import read_bounded
from mcp_tempest.targets.transcript import Event, Transcript
from mcp_tempest.targets.transports import HTTP, STDIO, Transport

STDERR_TAIL = 4000
#: What the client prints about what it understood is kept from its start up to this; a client
#: that floods its stdout is read on (so it does not block) and only counted.
STDOUT_CAP = 1024 * 1024
#: How long stdout may stay open after the client itself exited (a daemon it left holds it).
SETTLE = 0.5


class ClientCommandError(ValueError):
    """A client command template that cannot be run; the message is one line."""


@dataclass(frozen=True, slots=True)
class ClientCommand:
    template: str
    transport: Transport  # STDIO ({server}) or HTTP ({url})

    @classmethod
    def parse(cls, template: str) -> ClientCommand:
        try:
            tokens = shlex.split(template)
        except ValueError as exc:
            raise ClientCommandError(f"--client cannot be parsed: {exc}") from None
        has_server = any("{server}" in t for t in tokens)
        has_url = any("{url}" in t for t in tokens)
        if not tokens:
            raise ClientCommandError("--client is empty")
        if has_server == has_url:
            raise ClientCommandError("--client must contain exactly one of {server} (stdio) and {url} (HTTP)")
        return cls(template, STDIO if has_server else HTTP)

    def argv(self, *, server: list[str] | None = None, url: str | None = None) -> list[str]:
        out: list[str] = []
        for tok in shlex.split(self.template):
            if tok == "{server}" and server is not None:
                out.extend(server)
            elif "{server}" in tok and server is not None:
                out.append(tok.replace("{server}", shlex.join(server)))
            elif url is not None:
                out.append(tok.replace("{url}", url))
            else:
                out.append(tok)
        return out


def run_case(command: ClientCommand, case: ClientCase, *, timeout: float = 20.0) -> Transcript:
    """Run the client once against `case`; the whole exchange as one transcript."""
    if command.transport.http_semantics:
        from mcp_tempest.fuzz.client.http_server import serve_case

        with serve_case(case) as served:
            transcript = _run_client(command.argv(url=served.url), timeout=timeout, transport="http",
                                     template=command.template, server_events=served.finished)
        return transcript
    with ownership.owned_tempdir("tempest-client-") as d:
        (d / "case.json").write_bytes(orjson.dumps(case.to_json()))
        server = [sys.executable, "-m", "mcp_tempest.fuzz.client.stub", str(d / "case.json"), str(d)]
        return _run_client(command.argv(server=server), timeout=timeout, transport="stdio",
                           template=command.template, log_dir=d)


def _run_client(argv: list[str], *, timeout: float, transport: str, template: str,
                log_dir: Path | None = None,
                server_events: Callable[[], list[tuple[Event, int]]] | None = None) -> Transcript:
    """Start the client as a server is started (`targets.processes.spawn`: its own group, tagged,
    parent-death signal, the guardian after a SIGKILLed harness, stderr in a bounded ring), read
    its stdout with a cap until it exits or `timeout` runs out (the whole run's deadline), then
    end everything it started: its group, and whatever left the group carrying its tag."""
    started = time.monotonic()
    client: list[Event] = [Event("spawn", started, proc=0, note=shlex.join(argv))]
    try:
        proc = processes.spawn(argv, pipes=True)
    except processes.SpawnError as exc:
        raise ClientCommandError(f"cannot start the client: {exc}") from None
    try:
        if proc.popen.stdin is not None:
            proc.popen.stdin.close()  # the client reads nothing from us on stdin
        out, total, timed_out = _read_stdout(proc, started + timeout)
        ended = time.monotonic()
        if timed_out:
            client.append(Event("timeout", ended, proc=0, note=f"the client did not finish within {timeout:g}s"))
    finally:
        status = proc.reap(grace=0.0, term_grace=0.5)
        err = proc.stderr_tail(STDERR_TAIL)
        proc.close_log()
        proc.close_pipes()
    killed = timed_out or proc.ended_by in ("SIGTERM", "SIGKILL")
    lines = out.splitlines()
    if total > len(out):
        if not out.endswith(b"\n") and lines:
            lines.pop()  # cut by the cap
        client.append(Event("oversize", ended, proc=0,
                            note=f"the client printed {total} bytes to stdout; the first {len(out)} were kept"))
    for line in lines:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            client.append(Event("reading", ended, proc=0, message=value))
        elif line.strip():
            client.append(Event("noise", ended, proc=0, raw=line[:400]))
    client.append(Event("exit", ended, proc=0, status=status, note="killed" if killed else "exited by itself"))
    if err:
        client.append(Event("stderr", ended, proc=0, raw=err))
    if log_dir is not None:
        server_rows = _read_logs(log_dir)
    else:
        server_rows = server_events() if server_events is not None else []
    return _merge(template, transport, started, client, server_rows)


def _read_stdout(proc: processes.ManagedProcess, deadline: float) -> tuple[bytes, int, bool]:
    """(the first STDOUT_CAP bytes, how many came in all, whether the deadline ended the read).

    Stops at EOF, or SETTLE seconds after the client itself exited when something it left
    behind (a daemon) still holds its stdout open: that must not hold the campaign."""
    assert proc.popen.stdout is not None
    fd = proc.popen.stdout.fileno()
    os.set_blocking(fd, False)
    buf = bytearray()
    total = 0
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if now >= deadline:
                return bytes(buf), total, True
            if exited_at is None and proc.exit_status() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > SETTLE:
                return bytes(buf), total, False
            if not sel.select(min(0.05, deadline - now)):
                continue
            for _ in range(16):  # bounded per round, so the exit and the deadline are looked at
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    return bytes(buf), total, False
                total += len(data)
                if len(buf) < STDOUT_CAP:
                    buf += data[:STDOUT_CAP - len(buf)]


def _read_logs(log_dir: Path) -> list[tuple[Event, int]]:
    rows: list[tuple[Event, int]] = []
    for path in sorted(log_dir.glob("proc-*.jsonl"))[:stub.MAX_PROCESSES]:
        try:
            data_bytes = read_bounded(path, stub.LOG_CAP + stub.LINE_CAP + 65536)
        except (OSError, ValueError):
            continue  # the stub keeps its log under the cap; a larger file is not ours
        for line in data_bytes.splitlines():
            try:
                data = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a kill
            rows.append((Event.from_json(data), int(data.get("seq", 0))))
    return rows


def _merge(template: str, transport: str, started: float, client: list[Event],
           server_rows: list[tuple[Event, int]]) -> Transcript:
    """One timeline: the client's events and every server process's, by time; each reply's `ref`
    (a per-process sequence number in the logs) becomes the index of the frame it answers."""
    rows: list[tuple[float, int, int, Event, int | None]] = []
    for order, ev in enumerate(client):
        rows.append((ev.t, 1 if ev.kind in ("reading", "noise", "exit", "stderr", "timeout") else 0, order, ev, None))
    for order, (ev, seq) in enumerate(server_rows):
        rows.append((ev.t, 0, order, ev, seq))
    rows.sort(key=lambda r: (r[1], r[0], r[3].proc, r[4] if r[4] is not None else r[2]))
    transcript = Transcript(template, transport)  # type: ignore[arg-type]
    index_of: dict[tuple[int, int], int] = {}
    for _, _, _, ev, seq in rows:
        ev.t = max(0.0, ev.t - started)
        if seq is not None:
            index_of[(ev.proc, seq)] = len(transcript.events)
        transcript.events.append(ev)
    for ev in transcript.events:
        if ev.kind in ("send", "http") and ev.ref is not None and ev.proc > 0:
            ev.ref = index_of.get((ev.proc, ev.ref))
    return transcript
