"""Playing a case against a target: connections per logical process, frames in order, answers kept.

The executor is the only code that decides which physical process a logical process of a case
is. During a campaign, a process a case marks `warm` may be one that already served earlier
examples (that is how properties that do not need a fresh process run many frames per process);
every other logical process is a fresh one taken from a pool that started it while the previous
example ran. A replay marks nothing warm, so every process it uses is fresh.
"""

from __future__ import annotations

import contextlib
import gc
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_tempest.fuzz.oracle.exchange import LEGACY_OPENERS, NO_HEAD_ID, TRAILER_WINDOW, head_id
from mcp_tempest.fuzz.oracle.expect import reply_still_owed
from mcp_tempest.fuzz.properties.case import RUN_SOURCE, BindingError, Case, Step, build_frame
from mcp_tempest.targets import wire
from mcp_tempest.targets.connection import Connection, same_id
from mcp_tempest.targets.endpoint import Endpoint as Endpoint  # re-exported: its home is targets/
from mcp_tempest.targets.endpoint import HarnessError as HarnessError
from mcp_tempest.targets.transcript import REUSED_NOTE, Transcript

DEFAULT_STEP_TIMEOUT = 5.0
# After a request went unanswered on a live process, one server/discover (which every modern
# server answers, and a legacy one refuses with an error, both answers) tells "slow on this
# request" from "stopped answering". It waits the campaign's whole step timeout (`--timeout`),
# plus the start-up allowance while a fresh process has not answered anything yet (see
# `answer_allowance`): a target is never called stopped on a clock shorter than the user's.
STALL_PROBE_ID_PREFIX = "tempest-stall-probe-"
# A server that keeps writing is not waited out: the settle before a notification ends after this.
SETTLE_LIMIT = 0.5


# --- one run of one case ---


@dataclass(slots=True)
class Run:
    """What happened when a case was played."""

    case: Case
    transcript: Transcript
    sends: dict[int, int] = field(default_factory=dict)  # step -> index of its `send` event
    responses: dict[int, Any] = field(default_factory=dict)  # step -> the response message
    response_events: dict[int, int] = field(default_factory=dict)  # step -> index of that `recv`
    skipped: dict[int, str] = field(default_factory=dict)  # step -> why it was not sent
    proc_of: dict[int, int] = field(default_factory=dict)  # logical proc -> transcript proc
    reused: set[int] = field(default_factory=set)  # logical procs that were warm processes
    frames: dict[int, Any] = field(default_factory=dict)  # step -> the frame actually sent
    dead: set[int] = field(default_factory=set)  # logical procs whose process ended mid-case
    # logical proc -> why it counts as having stopped answering (an unanswered request, then an
    # unanswered server/discover on the same live process); its later steps are not played
    stalled: dict[int, str] = field(default_factory=dict)
    own: set[Any] = field(default_factory=set)  # the property's own violations (set by judging)
    step_timeout: float = DEFAULT_STEP_TIMEOUT  # the campaign's `--timeout` this run was played with
    start_allowance: float = 0.0  # what a fresh stdio process got on top of it for its first answer
    run_values: dict[str, Any] = field(default_factory=lambda: {"nonce": uuid.uuid4().hex[:12]})
    _exchange: Any = None  # the oracle's pairing of this run's transcript, built once on first use

    @property
    def exchange(self) -> Any:
        """The transcript classified and paired by the oracle (`fuzz.oracle.exchange`): the one
        pairing of frames and answers that properties read once the run is over."""
        if self._exchange is None:
            from mcp_tempest.fuzz.oracle.exchange import build_exchange

            self._exchange = build_exchange(self.transcript)
        return self._exchange

    def pair(self, step: int) -> Any:
        """The exchange's Pair for a step's frame (None when the step was not sent)."""
        idx = self.sends.get(step)
        return None if idx is None else self.exchange.pair_at.get(idx)

    def response(self, step: int) -> Any:
        return self.responses.get(step)

    def result(self, step: int) -> dict[str, Any] | None:
        msg = self.responses.get(step)
        if isinstance(msg, dict) and isinstance(msg.get("result"), dict):
            return msg["result"]
        return None

    def error(self, step: int) -> dict[str, Any] | None:
        msg = self.responses.get(step)
        if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
            return msg["error"]
        return None

    def status(self, step: int) -> int | None:
        """HTTP status of the answer to a step (None on stdio or when none came)."""
        pair = self.pair(step)
        if pair is None or not self.transcript.transport.http_semantics:
            return None
        return self.exchange.status_of(pair)

    @property
    def stopped_answering(self) -> str | None:
        """Why the target stopped answering during this run (None: it did not): a verdict the
        campaign reports once and then stops the property, instead of timing out every example."""
        return next(iter(self.stalled.values()), None)

    def events_after(self, step: int) -> list[Any]:
        idx = self.sends.get(step)
        return [] if idx is None else self.transcript.events[idx + 1 :]


def _request_id(frame: Any) -> tuple[bool, Any]:
    """Whether the frame is a request whose answer can be matched by id, and that id."""
    if isinstance(frame, dict) and "method" in frame and "id" in frame:
        rid = frame["id"]
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return True, rid
    return False, None


#: A step this long (a `huge-frame` or a large `oversized-frame`) makes `execute` collect cycles first.
HUGE_STEP = 1024 * 1024


def execute(
    case: Case,
    endpoint: Endpoint,
    *,
    reuse: bool = False,
    timeout: float = DEFAULT_STEP_TIMEOUT,
    on_conn: Callable[[Connection], None] | None = None,
    start_allowance: float | None = None,
) -> Run:
    """Play `case`; every connection it opened is retired before this returns, whatever happens.

    `timeout` is the campaign's step timeout; `start_allowance` is what a fresh stdio process gets
    on top of it for its first answer (default: the endpoint's start-up timeout)."""
    if any(len(s.raw or b"") > HUGE_STEP for s in case.steps):
        # Earlier huge cases (11 MiB each) sit in reference cycles (Hypothesis' draw and shrink
        # bookkeeping) until the cycle collector runs, and large bytes do not make it run: 13 of
        # them were alive at once (265 MB). Collected here, at most the current one and one more.
        gc.collect()
    transcript = endpoint.new_transcript()
    run = Run(case=case, transcript=transcript)
    run.step_timeout = timeout
    run.start_allowance = float(getattr(endpoint, "timeout", 0.0) if start_allowance is None else start_allowance)
    conns: dict[int, Connection] = {}
    clean = False
    try:
        steps = case.steps
        i = 0
        while i < len(steps):
            j = i + 1
            if steps[i].group is not None:
                while j < len(steps) and steps[j].group == steps[i].group and steps[j].proc == steps[i].proc:
                    j += 1
            _play_batch(run, steps, range(i, j), conns, endpoint, reuse=reuse, timeout=timeout, on_conn=on_conn)
            i = j
        clean = True
        _await_owed_replies(run, conns)
    finally:
        for proc, conn in conns.items():
            keep = clean and reuse and proc in case.warm and not _opened_legacy(run, proc)
            try:
                endpoint.retire(conn, reusable=keep)
            except Exception:  # noqa: BLE001 - retiring must not hide the real outcome
                with contextlib.suppress(Exception):
                    conn.close()
    return run


#: How long a case reads on, at most, for a reply a probe frame is still owed (a concurrent server
#: may answer the sentinel first); a server that never sends it costs this much per example.
LATE_REPLY_LIMIT = 0.5
_LATE_REPLY_POLL = 0.05


def _await_owed_replies(run: Run, conns: dict[int, Connection]) -> None:
    """Before a stdio case ends: if a probe frame still has no reply it must get, read on a little,
    so a reply that is merely later than the sentinel's is in the transcript, not called missing."""
    expectations = {run.sends[k]: step.expect for k, step in enumerate(run.case.steps)
                    if step.expect is not None and k in run.sends}
    lines = [c for c in conns.values() if c.transport.line_framed]
    if not expectations or not lines:
        return
    deadline = time.monotonic() + LATE_REPLY_LIMIT
    while reply_still_owed(run.transcript, expectations) and time.monotonic() < deadline:
        live = [c for c in lines if c.alive()]
        if not live:
            return
        for conn in live:
            conn.drain(quiet=_LATE_REPLY_POLL, timeout=_LATE_REPLY_POLL)


def _opened_legacy(run: Run, proc: int) -> bool:
    """Whether the case sent this process a 2025-era handshake (initialize): a dual-era server may
    scope the process to that era from then on (VER-05), so it must not serve later examples,
    whose transcripts would not show why it answers by 2025 rules. A request that merely claims no
    modern version is too common (the framing probes) to retire a process over: the stdio driver
    carries it into the next case's spawn note instead (ERA_OPEN_NOTE), and the oracle excuses
    what a dual-era server may then answer by 2025 rules."""
    for k, step in enumerate(run.case.steps):
        if step.proc != proc or k not in run.sends:
            continue
        frame = run.frames.get(k)
        method = frame.get("method") if isinstance(frame, dict) else None
        if isinstance(method, str) and method in LEGACY_OPENERS:  # a mutated method may be a list
            return True
        if step.raw is not None and any(f'"{m}"'.encode() in step.raw for m in LEGACY_OPENERS):
            return True
    return False


def _connection(
    run: Run, proc: int, conns: dict[int, Connection], endpoint: Endpoint, *, reuse: bool,
    on_conn: Callable[[Connection], None] | None,
) -> Connection:
    conn = conns.get(proc)
    if conn is not None:
        return conn
    before = len(run.transcript.events)
    if reuse and proc in run.case.warm:
        conn = endpoint.warm(run.transcript)
    else:
        conn = endpoint.fresh(run.transcript)
    conns[proc] = conn
    spawned = [e for e in run.transcript.events[before:] if e.kind == "spawn"]
    run.proc_of[proc] = spawned[-1].proc if spawned else getattr(conn, "proc", proc)
    if spawned and REUSED_NOTE in spawned[-1].note:
        run.reused.add(proc)
    if on_conn is not None:
        on_conn(conn)
    return conn


def _play_batch(
    run: Run, steps: list[Step], indices: range, conns: dict[int, Connection], endpoint: Endpoint, *,
    reuse: bool, timeout: float, on_conn: Callable[[Connection], None] | None,
) -> None:
    ready: list[tuple[int, Any]] = []
    for k in indices:
        step = steps[k]
        if step.proc in run.dead:
            # Everything after a process died would only repeat "no answer": the death is the finding.
            run.skipped[k] = "the process had ended"
            continue
        if step.proc in run.stalled:
            run.skipped[k] = "the process had stopped answering"
            continue
        if step.wait == "exit":
            _shut_down(run, k, conns, endpoint, reuse=reuse, on_conn=on_conn)
            continue
        try:
            frame = build_frame(step, {**run.responses, RUN_SOURCE: run.run_values})
        except BindingError as exc:
            run.skipped[k] = str(exc)
            continue
        payload: Any = step.raw if step.raw is not None else frame
        if payload is None:
            run.skipped[k] = "nothing to send"
            continue
        run.frames[k] = frame
        ready.append((k, payload))
    if not ready:
        return
    conn = _connection(run, steps[ready[0][0]].proc, conns, endpoint, reuse=reuse, on_conn=on_conn)
    if len(ready) == 1 and steps[ready[0][0]].wait == "stream":
        k, payload = ready[0]
        _stream_then_close(run, conn, k, payload, timeout=steps[k].timeout or timeout)
    elif len(ready) == 1:
        k, payload = ready[0]
        settle_before(conn, payload)
        method = {"http_method": steps[k].http_method} if steps[k].http_method != "POST" else {}
        run.sends[k] = conn.send(payload, headers=_headers_for(steps[k], run.frames.get(k)), **method)
    else:
        indices_sent = conn.send_concurrently(
            [p for _, p in ready], headers=[_headers_for(steps[k], run.frames.get(k)) for k, _ in ready],
            timeout=max((steps[k].timeout or timeout) for k, _ in ready),
        )
        for (k, _), idx in zip(ready, indices_sent, strict=True):
            run.sends[k] = idx
    for k, _ in ready:
        step = steps[k]
        if step.wait != "response":
            continue
        wait = step.timeout or (timeout + answer_allowance(run, conn))
        _collect_response(run, conn, k, step, timeout=wait)
        if k not in run.responses and _timed_out(run, k) and endpoint.is_alive(conn):
            why = _stall_probe(run, conn, k, timeout=timeout + answer_allowance(run, conn))
            if why is not None:
                run.stalled[step.proc] = why
                break
    if not endpoint.is_alive(conn):
        run.dead.add(steps[ready[0][0]].proc)


def answer_allowance(run: Run, conn: Connection) -> float:
    """The start-up allowance a wait on `conn` gets on top of the step timeout: the run's
    `start_allowance` while the connection is a fresh stdio process that has not answered anything
    yet (a process spawned for this case under load may take seconds to read its first frame),
    else nothing."""
    if not conn.transport.line_framed or getattr(conn, "shared", False):
        return 0.0
    for e in run.transcript.events:
        if conn.mine(e) and (e.kind == "recv" or (e.kind == "spawn" and REUSED_NOTE in e.note)):
            return 0.0  # it has answered, here or (a warm process) in an earlier case
    return run.start_allowance


def _shut_down(run: Run, k: int, conns: dict[int, Connection], endpoint: Endpoint, *, reuse: bool,
               on_conn: Callable[[Connection], None] | None) -> None:
    """Step `k` ends its process as a client ends a stdio server (STDIO-10: stdin closed), with
    what the server writes on the way out (a listen's closing result, SUB-08) and its exit in
    this case's transcript."""
    step = run.case.steps[k]
    conn = _connection(run, step.proc, conns, endpoint, reuse=reuse, on_conn=on_conn)
    if not conn.transport.line_framed or getattr(conn, "shared", False):
        run.skipped[k] = "only a stdio process of this case's own is shut down by closing its stdin"
        return
    conn.close()
    run.dead.add(step.proc)


def _stream_then_close(run: Run, conn: Connection, k: int, payload: Any, *, timeout: float) -> None:
    """HTTP: open step `k`'s POST as a stream, wait for its first message (a listen's
    acknowledgement), then close the stream: how an HTTP client ends it (SUB-07, CAN-02)."""
    open_stream = getattr(conn, "open_stream", None)
    if not conn.transport.pairs_by_request or open_stream is None:
        run.skipped[k] = "a stream is opened and closed by the harness only over HTTP"
        return
    stream = open_stream(payload, headers=_headers_for(run.case.steps[k], run.frames.get(k)))
    run.sends[k] = stream.send_index
    try:
        stream.wait_for(lambda e: e.kind == "recv", timeout)
    finally:
        stream.close()


def settle_before(conn: Connection, payload: Any) -> None:
    """Before a notification on a line-framed transport right after an answer: let a trailer of
    that answer arrive first, so an id-less error after the notification is the notification's
    (RPC-10) and not a guess (see TRAILER_WINDOW). Anything that scripts frames to a server for
    the oracle sends through this too."""
    if not (conn.transport.line_framed and wire.is_notification(payload)):
        return
    for event in reversed(conn.transcript.events):
        if conn.mine(event):
            # a warm process's last answer was in an earlier case, just before this one began
            if (event.kind == "recv" and wire.is_response(event.message)) or \
                    (event.kind == "spawn" and REUSED_NOTE in event.note):
                conn.drain(quiet=TRAILER_WINDOW, timeout=SETTLE_LIMIT)
            return


def _stall_probe(run: Run, conn: Connection, k: int, *, timeout: float) -> str | None:
    """Step `k` got no answer on a live process: does that process still answer anything?"""
    rid = f"{STALL_PROBE_ID_PREFIX}{k}"
    probe = wire.build_request(rid, "server/discover")
    if conn.transport.pairs_by_request:
        idx = conn.send(probe, timeout=timeout)  # type: ignore[call-arg]  # HTTP: the POST waits itself
    else:
        idx = conn.send(probe)
    answered: Any
    if conn.transport.pairs_by_request:
        answered = any(e.kind == "recv" and wire.is_response(e.message) for e in conn.events_for(idx))
    else:
        # Any answer counts, not only the probe's: a serial server still working through frames
        # queued ahead of the probe (a batch of requests sent at once) is slow, not stopped.
        answered = conn.read_until(
            lambda e: e.kind == "recv" and wire.is_response(e.message),
            timeout, since=idx, awaited=f"stall probe after step {k} (id {rid!r})",
        )
    if answered:
        return None
    return (f"step {k} got no answer, and a server/discover sent after it got none within {timeout:g} s: "
            "the target stopped answering")


def _timed_out(run: Run, k: int) -> bool:
    """Whether the driver recorded a deadline passing while it waited for step `k`'s answer."""
    idx = run.sends.get(k)
    if idx is None:
        return False
    return any(e.kind == "timeout" and e.ref == idx for e in run.transcript.events[idx + 1 :])


def _headers_for(step: Step, frame: Any) -> dict[str, str] | None:
    """HTTP headers: the step's own (a header mutation), the conformant ones for a tool whose
    schema maps arguments to `Mcp-Param-*` headers, or None (the driver mirrors the body)."""
    if step.headers is not None:
        return dict(step.headers)
    if step.input_schema is not None and isinstance(frame, dict):
        return wire.http_headers(frame, input_schema=step.input_schema)
    return None


def _collect_response(run: Run, conn: Connection, k: int, step: Step, *, timeout: float) -> None:
    idx = run.sends[k]
    frame = run.frames.get(k)
    matchable, rid = _request_id(frame)
    if conn.transport.pairs_by_request:
        # Over HTTP the answer to a POST is exact (ref); a response there with another id is
        # still *the* answer, which is how cross-wiring shows.
        for event in conn.events_for(idx):
            if event.kind == "recv" and wire.is_response(event.message):
                if not matchable or ("id" in event.message and same_id(event.message["id"], rid)):
                    run.responses[k] = event.message
                    run.response_events[k] = _index_of(run.transcript, event, idx)
                    return
        for event in conn.events_for(idx):
            if event.kind == "recv" and wire.is_response(event.message):
                run.responses[k] = event.message
                run.response_events[k] = _index_of(run.transcript, event, idx)
                return
        return
    if not matchable:
        return
    event = conn.read_until(
        lambda e: (e.kind == "recv" and wire.is_response(e.message) and "id" in e.message
                   and same_id(e.message["id"], rid)) or (e.kind == "oversize" and _may_answer(e.raw, rid)),
        timeout, since=idx, awaited=f"response to step {k} (id {rid!r})",
    )
    if event is not None and event.kind == "recv":
        run.responses[k] = event.message
        run.response_events[k] = _index_of(run.transcript, event, idx)


def _may_answer(head: bytes | None, rid: Any) -> bool:
    """Whether a line over the cap (its head kept) may be the answer awaited: then waiting on
    is pointless, its content is unreadable either way (the oracle reads it so too)."""
    named = head_id(head or b"")
    return named is NO_HEAD_ID or same_id(named, rid)


def _index_of(transcript: Transcript, event: Any, start: int) -> int:
    for i in range(start, len(transcript.events)):
        if transcript.events[i] is event:
            return i
    return -1
