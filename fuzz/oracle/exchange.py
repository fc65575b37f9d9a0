"""The judged exchange: a transcript with every frame classified and every answer paired once.

Pairing is the oracle's hardest and most error-prone step, so it happens here and only here.
Over HTTP it is exact (each response carries `ref`, the index of the POST it answers). Over
stdio it is what a client can know: a response with an id answers the oldest outstanding frame
on the same process with that id (same value AND type); a response without a readable id answers
the one outstanding frame whose id could not be read (a malformed one, or a frame so large the
server may refuse it before reading its id), and failing that the latest notification, which is
how a reply to a notification (RPC-10) is caught.

An id-less reply is attributed only when exactly one outstanding frame could have drawn it. When
several could (a blank line, then a malformed frame; a frame with a raw newline is two lines), the
reply goes to none of them: it is recorded in `Exchange.ambiguous` and every candidate is marked
`maybe_answered`, so no rule reports silence, a wrong code or a missing id for it. A guess would
turn a correct server's one -32700 into "the malformed frame got no reply".

Timeouts are structured: a `timeout` event's `ref` is the send it waited for (both transports);
`Exchange.timed_out(pair)` is how rules read it, never the note text.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import orjson

from mcp_tempest.fuzz.oracle.facts import (
    Said,
    Sent,
    classify_said,
    classify_sent,
    header,
    http_verb,
    id_key,
    is_legacy_version,
    is_modern_version,
    valid_id,
)
from mcp_tempest.fuzz.oracle.model import Era, Expectation
from mcp_tempest.targets.transcript import ERA_OPEN_NOTE, REUSED_NOTE, Event, Transcript
from mcp_tempest.targets.transports import Transport

OrphanReason = Literal["unknown-id", "duplicate", "null-id"]
# A process the campaign reused (warm, it served earlier examples; its spawn note says so): a reply
# nothing in this transcript explains may be a late answer to one of those examples, so it is
# unattributable and kept apart, never judged.


@dataclass(slots=True)
class Pair:
    """One frame the harness sent and everything that answered it."""

    index: int
    event: Event
    sent: Sent
    responses: list[int] = field(default_factory=list)  # recv events that are results/errors for it
    stream: list[int] = field(default_factory=list)  # HTTP: other recv events on its response (SSE)
    http: list[int] = field(default_factory=list)  # HTTP: http/noise/timeout/error events for it
    by_position: bool = False  # stdio: answered by a reply without a readable id
    maybe_answered: bool = False  # stdio: one of several frames an id-less reply may answer
    timeouts: list[int] = field(default_factory=list)  # `timeout` events that waited for this frame

    @property
    def proc(self) -> int:
        return self.event.proc

    @property
    def method(self) -> str | None:
        return self.sent.method

    @property
    def headers(self) -> dict[str, str] | None:
        return self.event.headers


@dataclass(slots=True)
class Exchange:
    transcript: Transcript
    era: Era = "modern"
    expectations: Mapping[int, Expectation] = field(default_factory=dict)
    dual: bool = False  # the target serves both eras (the probe said so): see dual_era_excuses
    sent: dict[int, Sent] = field(default_factory=dict)
    said: dict[int, Said] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)
    pair_at: dict[int, Pair] = field(default_factory=dict)
    answer_of: dict[int, int] = field(default_factory=dict)  # recv index -> send index
    orphans: list[tuple[int, OrphanReason]] = field(default_factory=list)
    late: list[int] = field(default_factory=list)  # unexplained replies on a reused process (REUSED_NOTE)
    outstanding: dict[int, set[tuple[str, str]]] = field(default_factory=dict)  # reused proc -> ids owed
    reused_procs: set[int] = field(default_factory=set)
    era_open_procs: set[int] = field(default_factory=set)  # reused, and sent an era-less frame before (ERA_OPEN_NOTE)
    ambiguous: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # id-less recv -> candidates
    supported_versions: frozenset[str] | None = None  # union over discover results seen
    server_capabilities: dict[str, Any] | None = None  # union of keys over discover results seen
    memo: dict[str, Any] = field(default_factory=dict)  # per-exchange cache shared by the rules

    @property
    def transport(self) -> Transport:
        return self.transcript.transport

    @property
    def events(self) -> list[Event]:
        return self.transcript.events

    def answers(self, pair: Pair) -> Iterator[tuple[int, Said]]:
        for i in pair.responses:
            yield i, self.said[i]

    def timed_out(self, pair: Pair) -> Event | None:
        """The first `timeout` recorded while waiting for this frame's answer, if any."""
        return self.events[pair.timeouts[0]] if pair.timeouts else None

    def status_of(self, pair: Pair) -> int | None:
        """The HTTP status the frame got (the first recorded one), None over stdio or when unknown."""
        for i in (*pair.responses, *pair.stream, *pair.http):
            status = self.events[i].status
            if status is not None:
                return status
        return None

    def response_headers(self, pair: Pair) -> dict[str, str] | None:
        for i in (*pair.responses, *pair.stream, *pair.http):
            headers = self.events[i].headers
            if headers is not None:
                return headers
        return None

    def died_unasked(self, proc: int, after: int) -> Event | None:
        """The `exit` of `proc` after event `after` when the process ended on its own, before the
        harness closed its stdin or stopped it; None otherwise (STDIO-10 lets a server exit on EOF)."""
        for event in self.events[after + 1 :]:
            if event.proc != proc:
                continue
            if _harness_ended(event):
                return None
            if event.kind == "exit":
                return event if event.note.startswith("exited by itself") else None
        return None

    def request_scope(self, recv: int) -> list[Pair]:
        """The requests a server notification at event `recv` may belong to (progress, logs).

        Over HTTP exactly one: the POST whose response stream carried it. Over stdio what a
        client can know: the requests on the same process that were sent before it and not yet
        answered (the notification was written while they were in flight). A process the
        campaign reused was retired clean, so nothing from earlier examples is still in flight.
        """
        event = self.events[recv]
        if self.transport.pairs_by_request:
            pair = self.pair_at.get(event.ref) if event.ref is not None else None
            return [pair] if pair is not None else []
        return [p for p in self.pairs
                if p.index < recv and p.proc == event.proc and p.sent.kind == "request"
                and not any(r < recv for r in p.responses)]

    def advertised(self, capability: str) -> bool | None:
        """Whether the server advertised a capability in some DiscoverResult seen; None = unknown."""
        if self.server_capabilities is None:
            return None
        return capability in self.server_capabilities


def dual_era_excuses(x: Exchange, pair: Pair, *, reaction: bool = False) -> str | None:
    """The dual-era policy, in one place: why a dual-era target may serve this frame by 2025-era
    rules (VER-05, HDR-02's exception), or None. Every rule and expectation that judges a frame
    outside the modern protocol asks this and, when excused, judges survival only.

    Outside the modern protocol: a legacy method (initialize), a legacy protocolVersion, no
    protocolVersion claim at all (no params, no _meta, or no key), legacy traffic on its process
    or session, over HTTP no MCP-Protocol-Version header, a GET or DELETE on the endpoint (the
    2025 transport's stream and session end), or an expectation marked modern-only.

    Two things narrow it. A frame malformed in every era (`Sent.malformed_in_every_era`: params
    or `_meta` not an object) owes the refusal its expectation names whichever era the server
    reads it in: for the caller judging that reaction (`reaction=True`) it is never excused, while
    a modern rule's own demand on it (META-04's -32602 for the missing protocolVersion) is one
    era's and stays excused. And the process-wide excuse (an earlier frame may have set the
    process's era) ends where the server shows which era it read: a frame that claims 2026-07-28
    and was answered by modern rules (`answered_modern`) is judged by them; answered the 2025 way
    (a result without resultType, or an error, which both eras share) it stays excused.
    """
    if not x.dual:
        return None
    sent = pair.sent
    exp = x.expectations.get(pair.index)
    if exp is not None and exp.modern_only:
        return "the probe frame is outside the modern protocol, which a dual-era server may read as legacy"
    if sent.kind == "endpoint":
        return ("a GET or DELETE on the endpoint, which a dual-era server's 2025 transport serves "
                "(its GET stream, its session end)")
    if sent.kind not in ("request", "notification"):
        return None
    if reaction and sent.malformed_in_every_era:
        return None
    if pair.method in LEGACY_OPENERS or sent.legacy:
        return "legacy-era traffic, which a dual-era server serves by 2025-era rules (VER-05)"
    if sent.version_missing:
        return "no protocolVersion claim, which a dual-era server may read as a 2025-era request"
    if x.transport.http_semantics and pair.headers is not None and header(pair.headers, "MCP-Protocol-Version") is None:
        return "no MCP-Protocol-Version header, which HDR-02 lets a dual-era server read as 2025-03-26"
    if not x.transport.line_framed or answered_modern(x, pair):
        return None
    if any(_legacy_readable(other) for other in x.pairs if other.proc == pair.proc and other.index < pair.index):
        return ("an earlier frame on this process could be read as 2025-era, and a dual-era server may "
                "take that as the process's era (VER-05: legacy semantics scoped to the process)")
    if pair.proc in x.era_open_procs:
        # The frames of the earlier examples this warm process served are not in this transcript;
        # the driver's note says one of them claimed no modern era. Seen on the TypeScript SDK:
        # after a claim-less tools/list in one example, the next example's valid server/discover
        # got -32601 on that process, while fresh processes serve it.
        return ("an earlier example sent this process a frame that claimed no 2026-07-28 era, and a dual-era "
                "server may take that as the process's era (VER-05: legacy semantics scoped to the process)")
    return None


def answered_modern(x: Exchange, pair: Pair) -> bool:
    """Whether the server showed it read this frame by 2026-07-28 rules: the frame claims a modern
    protocolVersion and a result to it carries resultType (RT-01; a 2025-era result has none,
    RT-05). An error shows no era: -32601 and -32602 read the same in both."""
    return is_modern_version(pair.sent.version) and any(
        said.kind == "result" and isinstance(said.result, dict) and "resultType" in said.result
        for _, said in x.answers(pair))


def _legacy_readable(pair: Pair) -> bool:
    sent = pair.sent
    return sent.kind in ("request", "notification") and (
        pair.method in LEGACY_OPENERS or sent.legacy or sent.version_missing)


def _harness_ended(event: Event) -> bool:
    """An event recording that the harness itself closed the server's stdin (a driver that
    records `close_stdin` says so in the note), after which exiting is the server's right."""
    note = event.note.lower()
    if note.startswith("broken pipe"):
        return False  # the server closed its own stdin (it stopped reading): nothing the harness did
    return event.kind != "exit" and "stdin" in note and "close" in note


def build_exchange(
    transcript: Transcript,
    *,
    era: Era = "modern",
    expectations: Mapping[int, Expectation] | None = None,
    discover: Mapping[str, Any] | None = None,
    dual: bool = False,
) -> Exchange:
    """Classify and pair everything once. `discover` is a DiscoverResult the caller already has
    (the era probe's): its supportedVersions and capabilities count as if seen in the transcript."""
    x = Exchange(transcript, era, dict(expectations or {}), dual=dual)
    events = transcript.events
    for i, event in enumerate(events):
        if event.kind == "send":
            verb = http_verb(event.note) if transcript.transport.http_semantics else "POST"
            sent = classify_sent(event.message, event.raw, line_framed=transcript.transport.line_framed, verb=verb)
            pair = Pair(i, event, sent)
            x.sent[i] = pair.sent
            x.pairs.append(pair)
            x.pair_at[i] = pair
        elif event.kind == "recv":
            x.said[i] = classify_said(event.message)
    for i, event in enumerate(events):
        if event.kind == "timeout" and event.ref is not None and event.ref in x.pair_at:
            x.pair_at[event.ref].timeouts.append(i)
    if transcript.transport.pairs_by_request:
        _pair_http(x)
    else:
        _pair_stdio(x)
    _mark_legacy_traffic(x)
    _learn_discover(x, discover)
    return x


def _pair_http(x: Exchange) -> None:
    for i, event in enumerate(x.events):
        if event.ref is None or event.ref not in x.pair_at or event.kind in ("send", "spawn"):
            continue
        pair = x.pair_at[event.ref]
        if event.kind == "recv":
            if x.said[i].is_response:
                pair.responses.append(i)
                x.answer_of[i] = pair.index
            else:
                pair.stream.append(i)
        else:
            pair.http.append(i)


@dataclass(slots=True)
class _ProcState:
    by_id: dict[tuple[str, str], deque[int]] = field(default_factory=dict)
    unreadable: list[int] = field(default_factory=list)  # frames whose id could not be read
    notifications: list[int] = field(default_factory=list)
    answered: set[tuple[str, str]] = field(default_factory=set)


def _pair_stdio(x: Exchange) -> None:
    procs: dict[int, _ProcState] = {}
    for i, event in enumerate(x.events):
        if event.kind == "spawn" and REUSED_NOTE in event.note:
            x.reused_procs.add(event.proc)
            if f"{REUSED_NOTE} {ERA_OPEN_NOTE}" in event.note:
                x.era_open_procs.add(event.proc)
            outstanding = _outstanding_ids(event.note)
            if outstanding is not None:
                x.outstanding[event.proc] = outstanding
        elif event.kind == "send":
            state = procs.setdefault(event.proc, _ProcState())
            sent = x.sent[i]
            if sent.has_id:
                state.by_id.setdefault(id_key(sent.id), deque()).append(i)
            if sent.kind == "notification":
                state.notifications.append(i)
            elif not sent.id_readable or not sent.envelope_ok or id_may_be_unread(event.raw):
                # A frame whose id is unreadable, or readable in a broken envelope (RPC-07 lets
                # the server answer those without the id), or a response the client should not
                # have sent (STDIO-04), or one too large to read at all: each may draw an error
                # without an id, one per line the server sees (a raw newline inside the frame
                # makes it two lines, two errors).
                state.unreadable.extend([i] * _lines_in(event.raw))
        elif event.kind == "recv" and x.said[i].is_response:
            state = procs.setdefault(event.proc, _ProcState())
            _attribute(x, state, i, x.said[i])
        elif event.kind == "oversize" and event.proc in procs:
            _over_cap(x, procs[event.proc], event.raw or b"")


_HEAD_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"]*"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,')
#: `head_id`'s answer for a head that does not open with an id: it may answer any request.
NO_HEAD_ID: Any = object()


def head_id(head: bytes) -> Any:
    """The id an over-cap line names where a response opens (`{"jsonrpc":"2.0","id":...`), or
    NO_HEAD_ID. Only the head of such a line is kept, and a server that writes its id first says
    which request the line answers; any other id in the head may belong to the result."""
    found = _HEAD_ID.match(head)
    if found is None:
        return NO_HEAD_ID
    try:
        return orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return NO_HEAD_ID


def _over_cap(x: Exchange, state: _ProcState, head: bytes) -> None:
    """A line over the harness's cap (discarded unread but for its head) may be the answer of any
    request still outstanding on its process: a 50 MB tools/list page is an answer, not silence.
    When the head names the id first only that request may have been answered; otherwise every
    one outstanding may have. None of them is reported silent."""
    named = head_id(head)
    named = None if named is NO_HEAD_ID else id_key(named)
    for key, queue in state.by_id.items():
        if named is None or key == named:
            for send_index in queue:
                x.pair_at[send_index].maybe_answered = True
    if named is None:
        for send_index in state.unreadable:
            x.pair_at[send_index].maybe_answered = True


# How soon after a server's answer an error without an id may still be that answer's trailer (a
# server that writes a stray error behind each result, in a second write). A notification sent
# sooner than this after the answer was read cannot be told apart from one that drew the error, so
# the executor waits this long in silence before it sends a notification on a line-framed
# transport, and the oracle guesses nothing when a transcript shows less.
TRAILER_WINDOW = 0.05


def _trails_earlier_answer(x: Exchange, recv: int, notification: int) -> bool:
    """Whether the server's message before `recv` on its process answered a frame sent before
    `notification`, and arrived after it was sent or less than TRAILER_WINDOW before. A warm
    process's last answer was in an earlier case: its spawn event stands for it."""
    proc = x.events[recv].proc
    before = next((j for j in range(recv - 1, -1, -1)
                   if x.events[j].proc == proc and x.events[j].kind in ("recv", "spawn")), None)
    if before is None:
        return False
    if x.events[before].kind == "spawn":
        if proc not in x.reused_procs:
            return False  # a fresh process had said nothing yet
    elif x.answer_of.get(before, notification) >= notification:
        return False
    return before > notification or x.events[notification].t - x.events[before].t < TRAILER_WINDOW


# A frame this large may be refused by a line or body limit before its id is read (RPC-07: the
# id could not be read); 1 MiB is the oversized-frame mutation's default and a common limit.
LARGE_FRAME_BYTES = 1 << 20


def id_may_be_unread(raw: bytes | None) -> bool:
    """Whether the server may have refused this frame before reading its id (its sheer size)."""
    return raw is not None and len(raw) >= LARGE_FRAME_BYTES


def _lines_in(raw: bytes | None) -> int:
    if not raw:
        return 1
    # A blank line is no frame, but a lenient server may still answer it with an id-less -32700:
    # it stays a candidate, so an id-less error after it and a malformed frame is ambiguous and
    # attributed to neither (no finding of that kind), rather than guessed.
    return max(1, sum(1 for line in raw.split(b"\n") if line.strip()))


def _attribute(x: Exchange, state: _ProcState, recv: int, said: Said) -> None:
    def take(send_index: int, *, by_position: bool = False) -> None:
        pair = x.pair_at[send_index]
        pair.responses.append(recv)
        pair.by_position = pair.by_position or by_position
        x.answer_of[recv] = send_index
        sent = x.sent[send_index]
        if sent.has_id:
            queue = state.by_id.get(id_key(sent.id))
            if queue and send_index in queue:
                queue.remove(send_index)
            state.answered.add(id_key(sent.id))
        if send_index in state.unreadable:
            state.unreadable.remove(send_index)
        if send_index in state.notifications:
            state.notifications.remove(send_index)
        if sent.kind == "request" and sent.id_readable:
            # The server has answered a request sent after these notifications: a reply to one
            # of them now would be a late reply to something else, not evidence of RPC-10.
            state.notifications[:] = [n for n in state.notifications if n > send_index]

    if said.has_id:
        queue = state.by_id.get(id_key(said.id))
        if queue:
            take(queue[0])
            return
    if not said.has_id or said.id is None or not valid_id(said.id):
        candidates = tuple(dict.fromkeys(state.unreadable))
        if len(candidates) == 1:
            take(candidates[0], by_position=True)
            return
        if candidates:
            # Several frames could have drawn it: attribute it to none (no guess), keep the
            # count right (one fewer reply is owed) and let no rule judge their silence.
            x.ambiguous.append((recv, candidates))
            state.unreadable.remove(candidates[0])
            for send_index in candidates:
                x.pair_at[send_index].maybe_answered = True
            return
        if state.notifications:
            latest = state.notifications[-1]
            if _trails_earlier_answer(x, recv, latest):
                # Right behind the answer to a request sent before the notification (a request
                # still in flight when it went out, as a cancellation's is, or answered just before
                # it): a trailer of that answer or a reply to the notification, the bytes cannot
                # say which. No guess.
                x.ambiguous.append((recv, (latest,)))
                x.pair_at[latest].maybe_answered = True
                return
            take(latest, by_position=True)
            return
        _orphan(x, recv, "null-id")
        return
    # A lenient server may read an id out of bytes that were not one JSON value (trailing
    # garbage, a split line): answer the oldest such frame whose bytes carry that id.
    token = re.compile(rb'"id"\s*:\s*' + re.escape(orjson.dumps(said.id)) + rb"\s*[,}]")
    for send_index in state.unreadable:
        raw = x.events[send_index].raw
        if x.sent[send_index].message is None or x.sent[send_index].kind == "split":
            if raw is not None and token.search(raw):
                take(send_index, by_position=True)
                return
    reason: OrphanReason = "duplicate" if id_key(said.id) in state.answered else "unknown-id"
    _orphan(x, recv, reason)


def _orphan(x: Exchange, recv: int, reason: OrphanReason) -> None:
    """An unexplained reply. On a reused process it may answer an earlier case: late, unless the
    spawn note lists what was still outstanding there and its id is not among them."""
    proc = x.events[recv].proc
    if proc in x.reused_procs:
        outstanding = x.outstanding.get(proc)
        said = x.said.get(recv)
        rid = said.id if said is not None and not said.id_absent_or_null else None
        if outstanding is None or rid is None or id_key(rid) in outstanding:
            x.late.append(recv)
            return
    x.orphans.append((recv, reason))


def _outstanding_ids(note: str) -> set[tuple[str, str]] | None:
    """The ids a reused process still owed when this case took it over (the driver's note), or
    None when the note does not say (older files): then any unexplained reply may be late."""
    _, found, rest = note.partition("outstanding=")
    if not found:
        return None
    try:
        ids = orjson.loads(rest.strip())
    except orjson.JSONDecodeError:
        return None
    return {id_key(v) for v in ids} if isinstance(ids, list) else None


LEGACY_OPENERS = frozenset({"initialize", "notifications/initialized"})


def _mark_legacy_traffic(x: Exchange) -> None:
    """Flag frames a server may serve by pre-2026 rules: the handshake itself, everything after
    a successful initialize on the same stdio process (VER-05), and over HTTP every request of a
    legacy session (an Mcp-Session-Id or a legacy MCP-Protocol-Version header) or without any
    MCP-Protocol-Version header, which HDR-02 lets a server that still serves old clients read as
    2025-03-26 whatever the body says (a modern-only server's duty to refuse it is judged by the
    caller's expectation, which knows the target's era).

    A request that makes no version claim in `_meta` and is served with a result that has no
    `resultType` was read by 2025-era rules: a dual-era server's reading of a frame outside the
    modern protocol (recorded in `memo["legacy_read"]` for META-04's heuristic). On stdio the
    process has then switched era, and what follows on it is legacy traffic too, but for a frame
    claiming 2026-07-28 that the server answered by modern rules (`answered_modern`).
    """
    initialized: set[int] = set()
    legacy_read: list[int] = []
    for pair in x.pairs:
        legacy = pair.method in LEGACY_OPENERS
        if x.transport.line_framed:
            # VER-05 scopes legacy semantics to the process, unless the server answered this frame
            # by modern rules: then it read the frame's own 2026-07-28 claim, and so is judged.
            legacy = legacy or (pair.proc in initialized and not answered_modern(x, pair))
            if pair.method == "initialize" and any(s.kind == "result" for _, s in x.answers(pair)):
                initialized.add(pair.proc)
        elif pair.headers:
            version = header(pair.headers, "MCP-Protocol-Version")
            legacy = legacy or (version is None and pair.sent.kind == "request")
            if not is_modern_version(pair.sent.version):
                # A modern body is judged as modern whatever a present header says (a differing
                # header is HDR-01's business, an incoming session id is ignored: DIGEST 7.4).
                legacy = legacy or header(pair.headers, "Mcp-Session-Id") is not None \
                    or is_legacy_version((version or "").strip())
        if not legacy and _served_as_legacy(x, pair):
            legacy = True
            legacy_read.append(pair.index)
            if x.transport.line_framed:
                initialized.add(pair.proc)
        if legacy:
            pair.sent = replace(pair.sent, legacy_context=True)
            x.sent[pair.index] = pair.sent
    x.memo["legacy_read"] = legacy_read


def _served_as_legacy(x: Exchange, pair: Pair) -> bool:
    sent = pair.sent
    if sent.kind != "request" or not sent.envelope_ok or not sent.version_missing or sent.method == "initialize":
        return False
    return any(said.kind == "result" and isinstance(said.result, dict) and "resultType" not in said.result
               for _, said in x.answers(pair))


def _learn_discover(x: Exchange, given: Mapping[str, Any] | None) -> None:
    versions: set[str] = set()
    caps: dict[str, Any] = {}
    seen = False
    results: list[Any] = [given] if given is not None else []
    for pair in x.pairs:
        if pair.method != "server/discover" or pair.sent.legacy:
            continue
        results.extend(said.result for _, said in x.answers(pair))
    for result in results:
        if not isinstance(result, Mapping) or result.get("resultType", "complete") != "complete":
            continue
        sv = result.get("supportedVersions")
        cp = result.get("capabilities")
        if isinstance(sv, list) and isinstance(cp, Mapping):
            seen = True
            versions.update(v for v in sv if isinstance(v, str))
            for key, value in cp.items():
                caps.setdefault(key, value)
    if seen:
        x.supported_versions = frozenset(versions)
        x.server_capabilities = caps
