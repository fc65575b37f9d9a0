"""DIGEST section 1: JSON-RPC framing as MCP restates it (RPC-*)."""

from __future__ import annotations

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair, id_may_be_unread
from mcp_tempest.fuzz.oracle.facts import describe, id_key, is_integer, same_id_value
from mcp_tempest.fuzz.oracle.model import BOTH_ERAS, Expectation, Strength, Violation, rule
from mcp_tempest.fuzz.oracle.tool_rules import call_summary

# HTTP refusals made before the JSON-RPC message is read (Origin, auth, method, media type, size):
# their optional error body has no id (HTTP-12, HTTP-13; the others are UNSPEC).
TRANSPORT_REJECTIONS = frozenset({401, 403, 405, 406, 413, 415})
# Frames the server cannot have read as one message: it may answer them with whatever id it made out
# (a GET or DELETE on the endpoint carries no message at all).
UNREAD_FRAMES = frozenset({"unparseable", "split", "empty", "endpoint"})


def _batch_sent_before(x: Exchange, recv: int) -> bool:
    """Whether an array (batch) frame went to the same process before `recv`: a reply to a batch is UNSPEC (RPC-11)."""
    event = x.events[recv]
    if x.transport.http_semantics:
        pair = x.pair_at.get(event.ref) if event.ref is not None else None
        return pair is not None and pair.sent.kind == "batch"
    return any(p.index < recv and p.proc == event.proc and p.sent.kind == "batch" for p in x.pairs)


@rule("RPC-01", "MUST", "every server message is a JSON-RPC 2.0 message; every request gets a response",
      eras=BOTH_ERAS)
def rpc_01(x: Exchange) -> list[Violation]:
    """RPC-01 brings in JSON-RPC 2.0, whose server MUST reply to every request (all but
    notifications) and whose messages have one shape. A request with a readable id and a sound
    envelope that got nothing is filed here, under the server's own duty (see `unanswered`)."""
    out: list[Violation] = unanswered(x)
    for i, said in x.said.items():
        msg = said.message
        if isinstance(msg, list) and _batch_sent_before(x, i):
            continue
        if not isinstance(msg, dict):
            if x.transport.line_framed:
                continue  # a non-object line on stdout is judged by STDIO-03
            out.append(Violation("RPC-01", "MUST", "response body is not a JSON-RPC object",
                                 f"got {describe(msg)}", None, i))
            continue
        if x.transport.line_framed and "jsonrpc" not in msg and said.kind == "invalid":
            continue  # a JSON log object on stdout: STDIO-03 reports it
        if msg.get("jsonrpc") != "2.0":
            out.append(Violation("RPC-01", "MUST", 'message lacks "jsonrpc": "2.0"',
                                 f"jsonrpc is {describe(msg.get('jsonrpc', '<absent>'))}", _method_of(x, i), i))
        elif said.kind == "invalid":
            if "result" in msg and "error" in msg:
                title = "response has both result and error"
            else:
                title = "message is neither a request, a notification nor a response"
            out.append(Violation("RPC-01", "MUST", title, describe(msg, 160), _method_of(x, i), i))
    if x.transport.http_semantics:
        for i, event in enumerate(x.events):
            if event.kind == "noise":
                out.append(Violation("RPC-01", "MUST", "SSE event data is not JSON", describe(event.raw),
                                     _method_of(x, i), i))
    return out


def _method_of(x: Exchange, recv: int) -> str | None:
    send = x.answer_of.get(recv)
    if send is None and x.events[recv].ref is not None:
        send = x.events[recv].ref
    pair = x.pair_at.get(send) if send is not None else None
    return pair.method if pair is not None else None


def _cancelled_ids(x: Exchange, pair: Pair) -> bool:
    """Whether the harness later cancelled this request (CAN-04: then no answer is expected)."""
    for other in x.pairs:
        if other.index <= pair.index or other.proc != pair.proc:
            continue
        if other.sent.method == "notifications/cancelled" and other.sent.params is not None:
            if same_id_value(other.sent.params.get("requestId"), pair.sent.id):
                return True
    return False


def _unanswered(x: Exchange, pair: Pair) -> str | None:
    """Why a readable request provably got no answer, or None when the transcript cannot tell."""
    if pair.responses or pair.maybe_answered or pair.method == "subscriptions/listen" or _cancelled_ids(x, pair):
        return None
    timeout = x.timed_out(pair)
    if x.transport.http_semantics:
        if timeout is not None:
            return f"no response before the deadline ({timeout.note or 'timeout'})"
        for i in pair.http:
            event = x.events[i]
            if event.kind == "http" and event.status is not None and 200 <= event.status < 300:
                return f"HTTP {event.status} without a JSON-RPC response"
            if event.kind == "closed" and "without the response" in event.note:
                return "the SSE stream ended without the response"
        return None
    in_flight = [p for p in x.pairs if p.proc == pair.proc and p.sent.has_id and same_id_value(p.sent.id, pair.sent.id)]
    if len(in_flight) > 1:
        return None  # the harness reused the id (RPC-05 probe): which frame was answered is unknowable
    if x.died_unasked(pair.proc, pair.index) is not None:
        return "the process exited by itself before answering"
    if timeout is not None:
        return f"no response before the deadline ({timeout.note or 'timeout'})"
    return None


def unanswered(x: Exchange) -> list[Violation]:
    """RPC-01 (JSON-RPC 2.0: "the Server MUST reply with a Response" to every request): a request
    with a readable id in a sound envelope that provably got nothing.

    The process exiting by itself before answering proves the reply was never sent: MUST. A
    deadline passing proves less (the deadline is the harness's; CAN-08 has clients time out,
    the spec sets no number): SHOULD, which still fails a campaign by default. After a frame of
    1 MiB or more (this one or the probe before it) the silence is HEURISTIC whatever ended it:
    DIGEST sets no size limit, and a server may give up on a frame that large without reading
    it; that it should say so and stay up is robustness, not a stated duty. A duplicate id in
    flight (RPC-05: the server's reaction is UNSPEC), a cancelled request (CAN-04) and a listen
    stream (open by design) are never reported.
    """
    out: list[Violation] = []
    for pair in x.pairs:
        if not (pair.sent.kind == "request" and pair.sent.id_readable and pair.sent.envelope_ok):
            continue
        why = _unanswered(x, pair)
        if why is None:
            continue
        proof = x.transport.line_framed and x.died_unasked(pair.proc, pair.index) is not None
        probe = _probe_before(x, pair)
        strength: Strength = "MUST" if proof else "SHOULD"
        if _after_large_frame(x, pair):
            strength = "HEURISTIC"
        # A process that died is a crash to fix, silence on a live one a dropped frame: two bugs.
        reaction = "the process exited before answering" if proof else "no reply before the deadline"
        call = call_summary(pair.method, pair.sent.params)  # which tool and input to try again
        out.append(Violation("RPC-01", strength, "request never answered", f"{why}; {call}" if call else why,
                             pair.method, pair.index, probe=probe.mutation if probe else None,
                             probe_rule=probe.rule if probe else None, reaction=reaction))
    return out


def _after_large_frame(x: Exchange, pair: Pair) -> bool:
    """Whether this request, or a frame sent before it on its process since the last answer, is
    large enough to be refused unread (exchange.LARGE_FRAME_BYTES)."""
    for other in reversed(x.pairs):
        if other.index > pair.index or other.proc != pair.proc:
            continue
        if id_may_be_unread(other.event.raw):
            return True
        if other.index < pair.index and other.responses:
            return False
    return False


def _probe_before(x: Exchange, pair: Pair) -> Expectation | None:
    """The probe frame after which this process answered nothing more, when there is one: the
    silence is then the server's reaction to that probe, and the finding names it."""
    for other in reversed(x.pairs):
        if other.index >= pair.index or other.proc != pair.proc:
            continue
        if other.index in x.expectations:
            return x.expectations[other.index]
        if other.responses:
            return None
    return None


@rule("RPC-06", "MUST", "a result carries its request's id and an object; every request is answered once",
      eras=BOTH_ERAS)
def rpc_06(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair in x.pairs:
        answers = list(x.answers(pair))
        if pair.sent.kind == "request" and pair.sent.id_readable and len(answers) > 1:
            out.append(Violation("RPC-06", "MUST", "request answered more than once",
                                 f"{len(answers)} responses to id {describe(pair.sent.id)}", pair.method, answers[1][0]))
        for i, said in answers:
            if said.kind != "result":
                continue
            if not isinstance(said.result, dict):
                out.append(Violation("RPC-06", "MUST", "result is not an object",
                                     f"result is {describe(said.result)}", pair.method, i))
            if pair.sent.kind in UNREAD_FRAMES and said.has_id and said.id is not None:
                continue  # the server read an id out of bytes that are no one JSON value: its call
            if not (said.has_id and pair.sent.has_id and same_id_value(said.id, pair.sent.id)):
                # (a null id echoed for a null-id request carries "the same id": the request,
                # not the reply, broke RPC-04, and an expectation judges the reaction)
                if pair.sent.kind == "notification":
                    continue  # RPC-10 reports replies to notifications
                got = describe(said.id) if said.has_id else "no id"
                out.append(Violation("RPC-06", "MUST", "result does not carry the request's id",
                                     f"request id {describe(pair.sent.id) if pair.sent.has_id else '<none>'}, "
                                     f"result has {got}", pair.method, i))
    for i, reason in x.orphans:
        said = x.said[i]
        if reason == "null-id":
            if said.kind == "result":
                out.append(Violation("RPC-06", "MUST", "result without a request id",
                                     "no outstanding frame explains a result without an id", None, i))
            continue
        title = ("second response with the same id" if reason == "duplicate"
                 else "response id matches no request sent to this process")
        out.append(Violation("RPC-06", "MUST", title, f"id {describe(said.id)}", None, i))
    return out


@rule("RPC-07", "MUST", "an error carries the request's id (absent or null only when it was unreadable)",
      eras=BOTH_ERAS)
def rpc_07(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair in x.pairs:
        sent = pair.sent
        if sent.kind == "notification" or sent.kind in UNREAD_FRAMES:
            continue  # RPC-10; bytes that are no one JSON value have no id to compare with
        for i, said in x.answers(pair):
            if said.kind != "error":
                continue
            if said.has_id and said.id is not None:
                if sent.has_id and same_id_value(said.id, sent.id):
                    continue
                out.append(Violation("RPC-07", "MUST", "error carries a different id than the request",
                                     f"request id {describe(sent.id) if sent.has_id else '<none>'}, "
                                     f"error id {describe(said.id)}", pair.method, i))
            elif sent.id_readable and sent.envelope_ok and x.events[i].status not in TRANSPORT_REJECTIONS \
                    and not id_may_be_unread(pair.event.raw):
                # §18.4 lets absent/null stand only for an id that could not be read.
                out.append(Violation("RPC-07", "MUST", "error omits a readable request id",
                                     f"request id {describe(sent.id)}", pair.method, i))
    for i, reason in x.orphans:
        if reason == "null-id" and x.said[i].kind == "error":
            out.append(Violation("RPC-07", "HEURISTIC", "error without an id while no malformed frame was outstanding",
                                 "every frame on this process had a readable id", None, i))
    return out


@rule("RPC-08", "MUST", "an error object has an integer code and a string message", eras=BOTH_ERAS)
def rpc_08(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for i, said in x.said.items():
        if said.kind != "error":
            continue
        err = said.error
        method = _method_of(x, i)
        if not isinstance(err, dict):
            out.append(Violation("RPC-08", "MUST", "error is not an object", f"error is {describe(err)}", method, i))
            continue
        if not is_integer(err.get("code")):
            out.append(Violation("RPC-08", "MUST", "error code is not an integer",
                                 f"code is {describe(err.get('code', '<absent>'))}", method, i))
        if not isinstance(err.get("message"), str):
            out.append(Violation("RPC-08", "MUST", "error message is not a string",
                                 f"message is {describe(err.get('message', '<absent>'))}", method, i))
    return out


@rule("RPC-10", "MUST", "a notification is never answered", eras=BOTH_ERAS)
def rpc_10(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.kind != "notification":
            continue
        for i, said in x.answers(pair):
            status = x.events[i].status
            if x.transport.http_semantics and said.kind == "error" and status is not None and status >= 400 \
                    and said.id_absent_or_null:
                continue  # HTTP-05: a rejected notification MAY carry an error body without an id
            out.append(Violation("RPC-10", "MUST", f"server answered the notification {pair.method}",
                                 f"reply: {describe(said.message, 120)}", pair.method, i))
    return out


@rule("RPC-12", "MUST", "the server never sends a JSON-RPC request (stdout, SSE): STDIO-06, HTTP-08")
def rpc_12(x: Exchange) -> list[Violation]:
    # A dual-era server may send requests to a client that opened with initialize (VER-05).
    legacy_procs = {p.proc for p in x.pairs if p.method == "initialize" and p.sent.legacy and p.responses}
    out: list[Violation] = []
    for i, said in x.said.items():
        if said.kind != "request":
            continue
        event = x.events[i]
        if x.transport.line_framed and event.proc in legacy_procs:
            continue
        origin = x.pair_at.get(event.ref) if event.ref is not None else None
        if origin is not None and origin.sent.legacy:
            continue
        out.append(Violation("RPC-12", "MUST", f"server sent a JSON-RPC request ({said.message.get('method')})",
                             "server-to-client requests travel only inside InputRequiredResult in 2026-07-28",
                             _method_of(x, i), i))
    return out


def in_flight_groups(x: Exchange) -> list[list[Pair]]:
    """Requests on one stdio process that shared an id while in flight together: each was sent
    before any earlier one with that id had been answered."""
    groups: list[list[Pair]] = []
    open_by_key: dict[tuple[int, tuple[str, str]], list[Pair]] = {}
    for pair in x.pairs:
        sent = pair.sent
        if sent.kind != "request" or not sent.id_readable:
            continue
        key = (pair.proc, id_key(sent.id))
        group = open_by_key.get(key)
        if group is not None and all(not p.responses or min(p.responses) > pair.index for p in group):
            group.append(pair)
            continue
        group = [pair]
        open_by_key[key] = group
        groups.append(group)
    return [g for g in groups if len(g) > 1]
