"""`mcp-tempest probe`: which era a server speaks, and what it offers (DIGEST 5.3).

The probe is the first thing a user runs against a new target, so its failures must explain
themselves: a command that does not exist, a server that dies at once, one that never answers,
one that prints a banner on stdout, a URL with nothing behind it. Each becomes one line on
stderr and exit status 2, never a traceback, and never a process left running; a server that
answers but refuses both eras is quoted (its error code and message). The command around it
(printing, exit status, --json) is fuzz/probe_command.py.

Algorithm: `server/discover` with modern `_meta` first. A DiscoverResult or a recognised modern
error (-32022 with data.supported, -32021, -32020, or over HTTP a 404 with a -32601 body) means
modern, and we do not fall back. Anything else, including silence, means we try the 2025-11-25
`initialize` handshake (then `notifications/initialized`): legacy. A modern server that also
completes `initialize` is dual-era.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

from mcp_tempest.targets import auth_client, extra_headers, wire
from mcp_tempest.targets.connect import Target
from mcp_tempest.targets.connection import Connection, is_response_to
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.list_reader import (
    ListBudget,
    ListRead,
    add_budget_options,
    describe_reply,
    read_connection_list,
)
from mcp_tempest.targets.processes import SpawnError
from mcp_tempest.targets.stdio_driver import StdioPool
from mcp_tempest.targets.target_spec import TargetError, TargetSpec
from mcp_tempest.targets.transcript import Event, Transcript

DEFAULT_PROBE_TIMEOUT: Final = 10.0
LISTS: Final = (("tools", "tools/list", "tools"), ("resources", "resources/list", "resources"),
                ("prompts", "prompts/list", "prompts"))
# What `mcp-tempest catalogue` reads besides: the templates are definitions the host prompt carries too.
CATALOGUE_LISTS: Final = (*LISTS, ("resourceTemplates", "resources/templates/list", "resourceTemplates"))
# What a probe that keeps no list items does with each page of each list: take(list name, items).
TakePage = Callable[[str, list[Any]], None]
# The capability that advertises each list (the templates come with `resources`).
_CAPABILITY: Final = {"resourceTemplates": "resources"}
MODERN_ERRORS: Final = frozenset({wire.UNSUPPORTED_PROTOCOL_VERSION, wire.MISSING_CLIENT_CAPABILITY,
                                  wire.HEADER_MISMATCH})
LEGACY_HTTP_HEADERS: Final = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class ProbeFailure(Exception):
    """The target is unusable; the message is the one line the user sees."""


@dataclass
class ProbeResult:
    target: str
    transport: str
    era: str = ""  # "modern", "legacy" or "dual"
    detection: str = ""  # what decided the era
    versions: list[str] = field(default_factory=list)
    version: str | None = None  # the version the lists were fetched with
    capabilities: dict[str, Any] | None = None
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    counts: dict[str, int | None] = field(default_factory=dict)  # None: not advertised or failed
    truncated: list[str] = field(default_factory=list)  # lists cut short (any pass): counts are lower bounds
    legacy: dict[str, Any] | None = None  # the initialize result (legacy and dual)
    # Each list as each pass read it (items, how far, complete or why not): one dict per pass
    # over the lists on the same connection (`probe(reads=2)` reads them twice, the catalogue's
    # drift check). A list not advertised is absent; one that failed is there, `failed` set.
    list_reads: list[dict[str, ListRead]] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0

    def problem(self, rule: str, message: str) -> None:
        entry = {"rule": rule, "message": message}
        if entry not in self.problems:
            self.problems.append(entry)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "transport": self.transport,
            "era": self.era,
            "detection": self.detection,
            "versions": self.versions,
            "version": self.version,
            "capabilities": self.capabilities,
            "serverInfo": self.server_info,
            "instructions": self.instructions,
            "counts": self.counts,
            "truncated": self.truncated,
            "lists": {name: read.to_json() for name, read in (self.list_reads[0] if self.list_reads else {}).items()},
            "legacy": self.legacy,
            "problems": self.problems,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def incomplete(self) -> list[ListRead]:
        """The first pass's lists that are not whole: cut short or unreadable."""
        return [read for read in (self.list_reads[0] if self.list_reads else {}).values() if not read.complete]

    def summary_line(self) -> str:
        label = self.era
        if self.era == "dual" and self.legacy:
            label += f" {self.version} + {self.legacy.get('protocolVersion')}"
        elif self.version:
            label += f" {self.version}"
        parts = [_count_text(self.counts.get(name), name, name in self.truncated) for name, _, _ in LISTS]
        return f"probe: {label}, " + ", ".join(parts)

    def human(self) -> str:
        info = self.server_info or {}
        server = " ".join(str(info.get(k)) for k in ("name", "version") if info.get(k)) or "(not given)"
        caps = ", ".join(sorted(self.capabilities)) if self.capabilities else "(none)"
        lines = [
            f"target:       {self.target}",
            f"era:          {self.era} ({self.detection})",
            f"versions:     {', '.join(self.versions) or '(unknown)'}",
            f"server:       {server}",
            f"capabilities: {caps}",
        ]
        for name, _, _ in LISTS:
            lines.append(f"{name + ':':<14}{_count_text(self.counts.get(name), name, name in self.truncated)}")
        lines += [f"note:         {read.describe()}" for read in self.incomplete()]
        lines += [f"problem:      {p['rule']}: {p['message']}" for p in self.problems]
        return "\n".join(lines)  # the summary line is the command's last (fuzz/probe_command.py)


def _count_text(count: int | None, name: str, truncated: bool) -> str:
    if count is None:
        return f"no {name}"
    noun = name if count != 1 else name[:-1]
    return f"{count}{'+' if truncated else ''} {noun}"


class _Prober:
    def __init__(self, conn: Connection, result: ProbeResult, timeout: float, budget: ListBudget,
                 lists: tuple[tuple[str, str, str], ...] = LISTS, reads: int = 1, take: TakePage | None = None) -> None:
        self.conn = conn
        self.lists = lists
        self.reads = reads
        self.take = take
        self.result = result
        self.timeout = timeout
        self.budget = budget
        self.ids = itertools.count(1)
        self.http = isinstance(conn, HttpConnection)
        self.session_id: str | None = None
        self.discover_outcome = ""

    # --- one exchange, either transport ---

    def exchange(self, msg: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[dict | None, list[Event]]:
        """Send `msg`; its response (or None) and the events that answered it."""
        if self.http:
            assert isinstance(self.conn, HttpConnection)
            index = self.conn.send(msg, headers=headers, timeout=self.timeout)
            events = self.conn.events_for(index)
            reply = next((e.message for e in events if is_response_to(e, msg.get("id"))), None)
            if reply is None and "id" in msg:
                # Over HTTP the pairing is by exchange, so a response with a wrong or null id
                # (a legacy server's "no session" error) still answers this request.
                reply = next((e.message for e in events if e.kind == "recv" and wire.is_response(e.message)), None)
            return reply, events
        index = self.conn.send(msg)
        if "id" not in msg:
            return None, []
        event = self.conn.read_until(
            lambda e: is_response_to(e, msg["id"]), self.timeout, since=index,
            awaited=f"response to {msg.get('method')}",
        )
        return (event.message, [event]) if event is not None else (None, [])

    # --- modern ---

    def discover(self, version: str = wire.MODERN_VERSION, capabilities: dict | None = None) -> tuple[dict | None, int | None]:
        msg = wire.build_request(next(self.ids), "server/discover", version=version, capabilities=capabilities)
        reply, events = self.exchange(msg)
        status = next((e.status for e in events if e.status is not None), None)
        return reply, status

    def try_modern(self) -> bool:
        reply, status = self.discover()
        self.discover_outcome = describe_reply(reply, self.timeout)
        if status is not None:
            self.discover_outcome = f"HTTP {status}, {self.discover_outcome}"
        if reply is None:
            self._transport_failure_check()
            return False
        result = reply.get("result")
        error = reply.get("error") if isinstance(reply.get("error"), dict) else None
        if isinstance(result, dict) and ("supportedVersions" in result or "resultType" in result):
            self.result.detection = "server/discover answered"
            self._take_discover(result, wire.MODERN_VERSION)
            return True
        if error is None:
            return False
        code = error.get("code")
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        if code == wire.UNSUPPORTED_PROTOCOL_VERSION and isinstance(data.get("supported"), list):
            supported = [v for v in data["supported"] if isinstance(v, str)]
            self.result.detection = f"server/discover answered -32022 (supported: {', '.join(supported)})"
            self.result.versions = supported
            if supported:
                version = max(supported)
                retry, _ = self.discover(version)
                if retry is not None and isinstance(retry.get("result"), dict):
                    self._take_discover(retry["result"], version)
            return True
        if code == wire.MISSING_CLIENT_CAPABILITY:
            self.result.detection = "server/discover answered -32021"
            required = data.get("requiredCapabilities")
            retry, _ = self.discover(capabilities=required if isinstance(required, dict) else None)
            if retry is not None and isinstance(retry.get("result"), dict):
                self._take_discover(retry["result"], wire.MODERN_VERSION)
            return True
        if code == wire.HEADER_MISMATCH:
            self.result.detection = "server/discover answered -32020"
            return True
        if self.http and status == 404 and code == wire.METHOD_NOT_FOUND:
            self.result.detection = "server/discover answered 404 with -32601"
            self.result.problem("DISC-01", "server/discover is not implemented (404, -32601)")
            self.result.version = wire.MODERN_VERSION
            return True
        return False

    def _take_discover(self, result: dict[str, Any], version: str) -> None:
        versions = result.get("supportedVersions")
        if isinstance(versions, list):
            self.result.versions = [v for v in versions if isinstance(v, str)]
        caps = result.get("capabilities")
        self.result.capabilities = caps if isinstance(caps, dict) else None
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        info = meta.get(wire.META_SERVER_INFO)
        if isinstance(info, dict):
            self.result.server_info = info
        elif isinstance(result.get("serverInfo"), dict):
            self.result.server_info = result["serverInfo"]
            self.result.problem("DISC-04", "serverInfo is a body field of DiscoverResult, not in _meta")
        if isinstance(result.get("instructions"), str):
            self.result.instructions = result["instructions"]
        self.result.version = version

    def modern_lists(self) -> None:
        for _ in range(self.reads):
            self._new_pass()
            self._modern_lists()

    def _new_pass(self) -> None:
        """Each pass over the lists has a budget of its own (pages per list; bytes and time over all)."""
        self.result.list_reads.append({})
        self.spend = self.budget.spend()

    def _modern_lists(self) -> None:
        version = self.result.version or wire.MODERN_VERSION
        for name, method, key in self.lists:
            caps = self.result.capabilities
            if caps is not None and _CAPABILITY.get(name, name) not in caps:
                self.result.counts[name] = None
                continue
            self._paginate(
                name, method, key,
                lambda cursor, m=method: wire.build_request(
                    next(self.ids), m, {"cursor": cursor} if cursor is not None else None, version=version
                ),
            )

    # --- legacy ---

    def initialize(self) -> dict[str, Any] | None:
        msg = wire.legacy_initialize(next(self.ids))
        reply, events = self.exchange(msg, headers=dict(LEGACY_HTTP_HEADERS) if self.http else None)
        if reply is None or not isinstance(reply.get("result"), dict):
            return None
        result = reply["result"]
        if not isinstance(result.get("protocolVersion"), str):
            return None
        for event in events:
            if event.headers and "mcp-session-id" in event.headers:
                self.session_id = event.headers["mcp-session-id"]
        note = wire.build_notification("notifications/initialized")
        self.exchange(note, headers=self._legacy_headers(result["protocolVersion"]) if self.http else None)
        return result

    def _legacy_headers(self, version: str) -> dict[str, str]:
        headers = dict(LEGACY_HTTP_HEADERS)
        headers["MCP-Protocol-Version"] = version
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def take_legacy(self, result: dict[str, Any]) -> None:
        self.result.legacy = {
            "protocolVersion": result["protocolVersion"],
            "capabilities": result.get("capabilities"),
            "serverInfo": result.get("serverInfo"),
        }
        self.result.versions = [result["protocolVersion"]]
        self.result.version = result["protocolVersion"]
        caps = result.get("capabilities")
        self.result.capabilities = caps if isinstance(caps, dict) else None
        if isinstance(result.get("serverInfo"), dict):
            self.result.server_info = result["serverInfo"]
        if isinstance(result.get("instructions"), str):
            self.result.instructions = result["instructions"]

    def legacy_lists(self) -> None:
        for _ in range(self.reads):
            self._new_pass()
            self._legacy_lists()

    def _legacy_lists(self) -> None:
        version = self.result.version or wire.LEGACY_VERSION
        headers = self._legacy_headers(version) if self.http else None
        for name, method, key in self.lists:
            caps = self.result.capabilities
            if caps is not None and _CAPABILITY.get(name, name) not in caps:
                self.result.counts[name] = None
                continue

            def build(cursor: str | None, m: str = method) -> dict[str, Any]:
                msg: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": m}
                if cursor is not None:
                    msg["params"] = {"cursor": cursor}
                return msg

            self._paginate(name, method, key, build, headers)

    def end_legacy_session(self) -> None:
        if self.http and self.session_id:
            assert isinstance(self.conn, HttpConnection)
            self.conn.send(None, http_method="DELETE", headers=self._legacy_headers(self.result.version or ""),
                           timeout=min(self.timeout, 2.0))

    # --- shared ---

    def _paginate(
        self, name: str, method: str, key: str, build: Any, headers: dict[str, str] | None = None
    ) -> None:
        """Read one list within the pass's budget (targets/list_reader.py); the first pass sets its count."""
        take = self.take
        read = read_connection_list(self.conn, build, name, method, key, timeout=self.timeout, budget=self.budget,
                                    spend=self.spend, headers=headers,
                                    take=None if take is None else lambda items: take(name, items))
        self.result.list_reads[-1][name] = read
        if len(self.result.list_reads) == 1:
            self.result.counts[name] = read.count
        if read.failed:
            self.result.problem("DISC-07", f"{name}: {method} failed: {read.failed}")
        elif read.cut and name not in self.result.truncated:
            self.result.truncated.append(name)

    def _transport_failure_check(self) -> None:
        """A transport error (connection refused, reset) makes the target unusable outright."""
        if not self.http:
            return
        errors = [e for e in self.conn.transcript.events if e.kind == "error"]
        if errors:
            raise ProbeFailure(f"cannot reach the target: {errors[-1].note}")


def probe(
    spec: TargetSpec,
    *,
    timeout: float = DEFAULT_PROBE_TIMEOUT,
    budget: ListBudget | None = None,
    check_dual: bool = True,
    transcript: Transcript | None = None,
    lists: tuple[tuple[str, str, str], ...] = LISTS,
    reads: int = 1,
    take: TakePage | None = None,
) -> ProbeResult:
    """Probe one target; raises ProbeFailure (one line) when it is unusable. Every process the
    probe starts is reaped before this returns or raises. `lists` are read `reads` times on the
    one connection, each read kept in `list_reads`, within `budget` per pass (the default
    budget when None: the era probe of every command is bounded). With `take`, each page of each
    list goes to `take(list name, items)` as it arrives and no item is kept (the reads count
    them; the transcript keeps the pages' bytes alone): what a caller measures of a list of any
    length costs one parsed page at a time."""
    budget = budget if budget is not None else ListBudget()
    started = time.monotonic()
    result = ProbeResult(target=spec.text, transport=spec.transport)
    transcript = transcript if transcript is not None else spec.new_transcript()
    # With the dual check on, a stdio target keeps one spare process starting in the background,
    # so the fresh process the check needs has already booted when it is wanted.
    prestart = 1 if check_dual else 0
    with Target(spec, timeout=timeout, prestart=prestart, ready_timeout=max(timeout, 1.0)) as target:
        try:
            conn = target.connect(transcript)
        except TargetError as exc:
            raise ProbeFailure(str(exc)) from None
        retry_fresh = False
        with conn:
            prober = _Prober(conn, result, timeout, budget, lists, reads, take)
            if prober.try_modern():
                result.era = "modern"
                prober.modern_lists()
            elif conn.alive() or prober.http:
                _legacy(prober)
            if not result.era and not prober.http and not conn.alive():
                # The process died after answering discover. A legacy server that exits on an
                # unknown method still deserves its handshake, on a fresh process.
                retry_fresh = any(e.kind == "recv" for e in transcript.events)
        if retry_fresh:
            with target.connect(transcript) as fresh:
                result.list_reads.clear()
                result.counts.clear()
                result.truncated.clear()
                fresh_prober = _Prober(fresh, result, timeout, budget, lists, reads, take)
                fresh_prober.discover_outcome = prober.discover_outcome + ", then the process exited"
                _legacy(fresh_prober)
        if result.era == "modern" and check_dual:
            _check_dual(target, transcript, result, timeout)
        # The connections are closed: exit status and stderr are in the transcript now.
        _stdout_problems(transcript, result)
        if not result.era:
            raise ProbeFailure(_explain(spec, transcript, timeout))
    result.elapsed_s = time.monotonic() - started
    return result


def _legacy(prober: _Prober) -> None:
    """The 2025-11-25 handshake, then the lists; leaves `era` empty when it fails."""
    legacy = prober.initialize()
    if legacy is None:
        prober._transport_failure_check()
        return
    prober.result.era = "legacy"
    prober.result.detection = f"server/discover: {prober.discover_outcome}; initialize answered"
    prober.take_legacy(legacy)
    prober.legacy_lists()
    prober.end_legacy_session()


def _check_dual(target: Target, transcript: Transcript, result: ProbeResult, timeout: float) -> None:
    """Does the modern server also complete a legacy handshake? On stdio the era is chosen by
    the first message a process sees (VER-05), so this needs a fresh process; over HTTP a new
    connection is enough."""
    try:
        pool = target.pool
        conn = pool.take(transcript, refill=False) if isinstance(pool, StdioPool) else target.connect(transcript)
    except (TargetError, SpawnError):
        return
    with conn:
        prober = _Prober(conn, result, timeout, ListBudget(pages=1))
        legacy = prober.initialize()
        if legacy is not None:
            result.era = "dual"
            result.detection += f"; initialize also answered ({legacy['protocolVersion']})"
            result.legacy = {
                "protocolVersion": legacy["protocolVersion"],
                "capabilities": legacy.get("capabilities"),
                "serverInfo": legacy.get("serverInfo"),
            }
            prober.end_legacy_session()


def _stdout_problems(transcript: Transcript, result: ProbeResult) -> None:
    if not transcript.transport.line_framed:
        return
    noise = [e for e in transcript.events if e.kind == "noise"]
    for event in noise[:3]:
        result.problem("STDIO-03", f"stdout carried a non-JSON line: {_snippet(event.raw)}")
    if len(noise) > 3:
        result.problem("STDIO-03", f"{len(noise) - 3} more non-JSON stdout lines")
    for event in list(transcript.of_kind("oversize"))[:1]:
        result.problem("STDIO-03", f"stdout carried a line over the cap: {event.note}")


def _explain(spec: TargetSpec, transcript: Transcript, timeout: float) -> str:
    """One line saying why the target is unusable, from what the transcript recorded."""
    events = transcript.events
    errors = [e for e in events if e.kind == "error" and "broken pipe" not in e.note]
    if spec.transport.pairs_by_request and errors:
        return f"cannot reach the target: {errors[-1].note}"
    noise = [e for e in events if e.kind == "noise"]
    exits = [e for e in events if e.kind == "exit"]
    answered = any(e.kind == "recv" for e in events)
    stderr = next((e.raw for e in events if e.kind == "stderr" and e.raw), b"")
    stderr_hint = ""
    if stderr:
        last = stderr.decode("utf-8", "replace").strip().splitlines()
        if last:
            stderr_hint = f" (stderr: {last[-1][:160]})"
    if noise and not answered:
        return (
            f"target wrote non-JSON on stdout and never answered: {_snippet(noise[0].raw)} "
            "(STDIO-03: stdout must carry only MCP messages)"
        )
    if exits and exits[0].note == "exited by itself" and not answered:
        return f"target exited with status {exits[0].status} before answering{stderr_hint}"
    if not answered:
        return f"no answer from the target within {timeout:g} s to server/discover or initialize{stderr_hint}"
    refusals = _refusals(events)
    return ("target answered, but neither server/discover nor initialize succeeded (speaks no known MCP era)"
            + (f": {refusals}" if refusals else ""))


REFUSAL_WIDTH: Final = 200  # characters of a server's own error message quoted in the unusable line


def _refusals(events: list[Event]) -> str:
    """The server's own refusals of the era probe, quoted: `server/discover and initialize
    answered -32602 "params._meta.protocolVersion must be a non-empty string"`. Its words, cut to
    REFUSAL_WIDTH; raw here (targets/ cannot reach fuzz/safe_text.py): every caller shows a
    ProbeFailure through `visible`."""
    methods = {e.message.get("id"): e.message.get("method") for e in events
               if e.kind == "send" and isinstance(e.message, dict) and "method" in e.message}
    said: dict[str, list[str]] = {}
    for e in events:
        error = e.message.get("error") if e.kind == "recv" and isinstance(e.message, dict) else None
        method = methods.get(e.message.get("id")) if isinstance(error, dict) else None
        if method not in ("server/discover", "initialize"):
            continue
        message = str(error.get("message", ""))
        text = f"{error.get('code')} \"{message[:REFUSAL_WIDTH]}{'...' if len(message) > REFUSAL_WIDTH else ''}\""
        if method not in said.setdefault(text, []):
            said[text].append(method)
    return "; ".join(f"{' and '.join(who)} answered {text}" for text, who in said.items())


def _snippet(raw: bytes | None, limit: int = 80) -> str:
    text = (raw or b"").decode("utf-8", "replace").strip()
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


class _Parser(argparse.ArgumentParser):
    """A usage mistake is one line on stderr and exit status 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"probe: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """probe's options, built apart from the command (fuzz/probe_command.py) so that fuzz/config.py can read them."""
    parser = _Parser(
        prog="mcp-tempest probe",
        description="Report which MCP era a server speaks and what it lists (DIGEST 5.3).",
    )
    parser.add_argument("--target", help="stdio:<cmd>, http://127.0.0.1:PORT/PATH or http+spawn:<cmd with {port}> "
                        "(default: the built-in reference server)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    parser.add_argument("--timeout", type=float, default=DEFAULT_PROBE_TIMEOUT,
                        help=f"seconds to wait for each answer (default {DEFAULT_PROBE_TIMEOUT:g})")
    add_budget_options(parser)
    parser.add_argument("--no-dual", action="store_true", help="do not try initialize on a modern server")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback host")
    extra_headers.add_option(parser)
    auth_client.add_options(parser)
    parser.add_argument("--isolate-network", action="store_true",
                        help="start each server in a network namespace of its own with only a loopback, so a tool that "
                             "fetches a generated URL reaches nothing (stdio: and http+spawn: targets; Linux, root)")
    return parser
