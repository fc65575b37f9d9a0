"""Client rules: one function per DIGEST rule that binds the client ([C] or [S/C]).

They judge a client-mode transcript (fuzz/client/runner.py), in which the harness is the server:
`recv`/`noise` events are the frames the client wrote, `send` events what the scripted server
answered (`ref` = the client frame answered, `note` = "reply[:probe]" or "hostile:<probe>"), and
`reading` events the JSON lines in which the client said what it understood.

The rules live in their own registry, `CLIENT_RULES`, which `fuzz.oracle.registry` never
imports: a server campaign cannot run them and they cannot collide with the server rules of the
same id (RPC-05, RT-04 and META-04 exist on both sides, judged from opposite ends). Pure code.

Strengths are DIGEST's (MUST NOT is reported as MUST). Two readings are ours, stated where used:
- META-04: DIGEST §2 says protocolVersion and clientCapabilities MUST be on every request; a
  request without them is what META-04 calls malformed, so the client's side is filed as META-04.
- a retry is the next request of the same method, on the same process, after an input_required
  answer; clients that run the same call twice in a row independently would be misread.

Eras: a connection (a stdio server process; the one HTTP endpoint) on which the client completed
the 2025-11-25 `initialize` handshake is a legacy one from then on. The 2026-07-28 request rules
(META-04, the MRTR rules) do not apply to its requests, and RT-05 applies only to its results:
DIGEST reads the missing-resultType-as-complete duty as one for results of earlier-revision
servers, so a modern server's result without resultType (its own RT-01 violation) may be refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from mcp_tempest.fuzz.oracle.model import Registry, Violation
from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Event, Transcript
from mcp_tempest.targets.transports import Transport

CLIENT_REGISTRY: Final = Registry()
CLIENT_RULES: Final = CLIENT_REGISTRY.rules
rule: Final = CLIENT_REGISTRY.rule

CORE_RESULT_TYPES: Final = ("complete", "input_required")
_INPUT_KIND_CAPABILITY: Final = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling",
                                 "roots/list": "roots"}
_MISSING: Final = object()


# --- the judged view of a client run ---


@dataclass(slots=True)
class ClientFrame:
    """One frame the client wrote, with what the scripted server wrote back for it."""

    index: int
    event: Event
    replies: list[int] = field(default_factory=list)  # send events with ref == index, in order

    @property
    def message(self) -> Any:
        return self.event.message

    @property
    def proc(self) -> int:
        return self.event.proc

    @property
    def method(self) -> str | None:
        m = self.message
        return m["method"] if isinstance(m, dict) and isinstance(m.get("method"), str) else None

    @property
    def is_request(self) -> bool:
        return self.method is not None and "id" in self.message

    @property
    def is_response(self) -> bool:
        m = self.message
        return isinstance(m, dict) and "method" not in m and ("result" in m or "error" in m)

    @property
    def params(self) -> dict[str, Any]:
        p = self.message.get("params") if isinstance(self.message, dict) else None
        return p if isinstance(p, dict) else {}


@dataclass(slots=True)
class ClientExchange:
    transcript: Transcript
    frames: list[ClientFrame] = field(default_factory=list)
    frame_at: dict[int, ClientFrame] = field(default_factory=dict)
    readings: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    _memo: dict[str, Any] = field(default_factory=dict)

    @property
    def events(self) -> list[Event]:
        return self.transcript.events

    @property
    def transport(self) -> Transport:
        return self.transcript.transport

    def requests(self) -> Iterator[ClientFrame]:
        return (f for f in self.frames if f.is_request)

    def reply(self, frame: ClientFrame) -> tuple[int, Any] | None:
        """The answer the client had to read (not the hostile frames around it)."""
        for i in frame.replies:
            if self.events[i].note.startswith("reply"):
                return i, self.events[i].message
        return None

    def result_of(self, frame: ClientFrame) -> dict[str, Any] | None:
        got = self.reply(frame)
        if got is None or not isinstance(got[1], dict) or not isinstance(got[1].get("result"), dict):
            return None
        return got[1]["result"]

    def retries(self) -> Iterator[tuple[ClientFrame, dict[str, Any], ClientFrame]]:
        """(request, its input_required result, the retry), for every retry the client sent."""
        for frame in self.requests():
            result = self.result_of(frame)
            if result is None or result.get("resultType") != "input_required":
                continue
            retry = self.next_request(frame, same_method=True)
            if retry is not None and _same_call(frame.params, retry.params):
                yield frame, result, retry

    def legacy_since(self) -> dict[int, int]:
        """proc -> index of the `initialize` request whose answer was a result (the legacy handshake)."""
        if "legacy" not in self._memo:
            found: dict[int, int] = {}
            for f in self.requests():
                if f.method == "initialize" and f.proc not in found and self.result_of(f) is not None:
                    found[f.proc] = f.index
            self._memo["legacy"] = found
        return self._memo["legacy"]

    def is_legacy(self, frame: ClientFrame) -> bool:
        since = self.legacy_since().get(frame.proc)
        return since is not None and frame.index >= since

    def next_request(self, frame: ClientFrame, *, same_method: bool) -> ClientFrame | None:
        for other in self.frames:
            if other.index > frame.index and other.is_request and other.proc == frame.proc and (
                    not same_method or other.method == frame.method):
                return other
        return None


def build_client_exchange(transcript: Transcript) -> ClientExchange:
    x = ClientExchange(transcript)
    for i, ev in enumerate(transcript.events):
        if ev.proc > 0 and ev.kind in ("recv", "noise"):
            frame = ClientFrame(i, ev)
            x.frames.append(frame)
            x.frame_at[i] = frame
        elif ev.kind == "reading" and isinstance(ev.message, dict):
            x.readings.append((i, ev.message))
    for i, ev in enumerate(transcript.events):
        if ev.kind == "send" and ev.ref in x.frame_at:
            x.frame_at[ev.ref].replies.append(i)
    return x


def judge_client(transcript: Transcript, *, rules: list[str] | None = None) -> list[Violation]:
    """Every client-rule violation in a client-mode transcript, in event order."""
    x = build_client_exchange(transcript)
    chosen = [r for r in CLIENT_RULES.values() if rules is None or r.id in rules]
    found: list[Violation] = []
    for r in chosen:
        found.extend(r.check(x))  # type: ignore[arg-type]  # client rules take a ClientExchange
    unique = list(dict.fromkeys(found))
    unique.sort(key=lambda v: (v.event_index if v.event_index is not None else -1, v.rule))
    return unique


def _v(rule_id: str, title: str, frame: ClientFrame | None = None, *, detail: str = "",
       index: int | None = None, probe: str | None = None, method: str | None = None) -> Violation:
    spec = CLIENT_RULES[rule_id]
    return Violation(rule=rule_id, strength=spec.strength, title=title, detail=detail,
                     method=method if method is not None else (frame.method if frame else None),
                     event_index=index if index is not None else (frame.index if frame else None),
                     probe=probe, probe_rule=None)


def _probe_of(x: ClientExchange, send_index: int | None) -> str | None:
    if send_index is None:
        return None
    note = x.events[send_index].note
    return note.split(":", 1)[1] if ":" in note else None


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _same_call(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether `b` retries the call `a` (same params apart from _meta and the MRTR fields)."""
    drop = ("_meta", "inputResponses", "requestState")
    return {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


# --- framing (DIGEST §1, §6) ---


@rule("RPC-01", "MUST", "every client message is a JSON-RPC 2.0 message")
def rpc_01(x: ClientExchange) -> list[Violation]:
    out = []
    for f in x.frames:
        m = f.message
        if f.event.kind == "noise":
            if (f.event.raw or b"").strip():
                out.append(_v("RPC-01", "the client wrote a line that is not JSON", f,
                              detail=repr((f.event.raw or b"")[:80])))
            continue
        if isinstance(m, list):
            continue  # a batch: RPC-11
        if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
            out.append(_v("RPC-01", 'a client message without "jsonrpc": "2.0"', f))
        elif "method" in m and not isinstance(m["method"], str):
            out.append(_v("RPC-01", "a client message whose method is not a string", f))
        elif "method" not in m and not ("id" in m and ("result" in m) != ("error" in m)):
            out.append(_v("RPC-01", "a client message that is neither a request, a notification nor a response", f))
    return out


@rule("RPC-02", "MUST", "client messages are UTF-8")
def rpc_02(x: ClientExchange) -> list[Violation]:
    out = []
    for f in x.frames:
        try:
            (f.event.raw or b"").decode("utf-8")
        except UnicodeDecodeError:
            out.append(_v("RPC-02", "the client wrote bytes that are not UTF-8", f))
    return out


@rule("RPC-03", "MUST", "a request id is a string or an integer")
def rpc_03(x: ClientExchange) -> list[Violation]:
    out = []
    for f in x.requests():
        rid = f.message["id"]
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int)):
            out.append(_v("RPC-03", f"a request id of type {type(rid).__name__}", f, detail=repr(rid)))
    return out


@rule("RPC-04", "MUST", "a request id is never null")
def rpc_04(x: ClientExchange) -> list[Violation]:
    return [_v("RPC-04", "a request with a null id", f) for f in x.requests() if f.message["id"] is None]


def _answered_before(x: ClientExchange, frame: ClientFrame, index: int) -> bool:
    got = x.reply(frame)
    if got is not None and got[0] < index:
        return True
    for other in x.frames:  # a cancelled request is no longer in flight
        if frame.index < other.index < index and other.method == "notifications/cancelled" and _same_id(
                other.params.get("requestId"), frame.message["id"]):
            return True
    return False


@rule("RPC-05", "MUST", "no request reuses the id of a request still in flight")
def rpc_05(x: ClientExchange) -> list[Violation]:
    out = []
    requests = list(x.requests())
    for j, later in enumerate(requests):
        for earlier in requests[:j]:
            if earlier.proc == later.proc and _same_id(earlier.message["id"], later.message["id"]) and (
                    not _answered_before(x, earlier, later.index)):
                out.append(_v("RPC-05", "a request reuses the id of a request still in flight", later,
                              detail=f"id {later.message['id']!r} of the {earlier.method} at event {earlier.index}"))
                break
    return out


@rule("RPC-11", "MUST", "every client message is a single message, never a batch array")
def rpc_11(x: ClientExchange) -> list[Violation]:
    return [_v("RPC-11", "the client sent a batch array", f) for f in x.frames if isinstance(f.message, list)]


def _responses(x: ClientExchange, transport: str, rule_id: str, title: str) -> list[Violation]:
    """Response frames from the client; one answering a request the server sent (itself a server
    violation, the `server-request` probe) is still the client's, and names that probe."""
    if x.transport != transport:
        return []
    asked: dict[tuple[str, Any], list[int]] = {}
    for i, e in enumerate(x.events):
        if e.kind == "send" and isinstance(e.message, dict) and "method" in e.message and "id" in e.message:
            asked.setdefault(_key(e.message["id"]), []).append(i)
    out = []
    for f in x.frames:
        if f.is_response:
            before = [i for i in asked.get(_key(f.message.get("id")), []) if i < f.index]
            out.append(_v(rule_id, title, f, detail=f"id {f.message.get('id')!r}",
                          probe=_probe_of(x, before[-1]) if before else None))
    return out


def _key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value if not isinstance(value, dict | list) else repr(value))


@rule("STDIO-04", "MUST", "the client writes only MCP messages to stdin, never JSON-RPC responses")
def stdio_04(x: ClientExchange) -> list[Violation]:
    return _responses(x, "stdio", "STDIO-04", "the client wrote a JSON-RPC response")


@rule("HTTP-04", "MUST", "a POST body is a single request or notification, never a response")
def http_04(x: ClientExchange) -> list[Violation]:
    return _responses(x, "http", "HTTP-04", "the client POSTed a JSON-RPC response")


# --- _meta (DIGEST §2) ---


@rule("META-04", "MUST", "every request carries _meta protocolVersion (a string) and clientCapabilities (an object)")
def meta_04(x: ClientExchange) -> list[Violation]:
    out = []
    for f in x.requests():
        if f.method == "initialize" or x.is_legacy(f):
            continue  # the 2025-11-25 handshake (a legitimate fallback, DIGEST 5.3) and what follows it
            # carry no per-request _meta
        meta = f.params.get("_meta")
        if not isinstance(meta, dict):
            out.append(_v("META-04", "a request without params._meta", f))
            continue
        if not isinstance(meta.get(wire.META_PROTOCOL_VERSION), str):
            out.append(_v("META-04", "a request without _meta protocolVersion", f))
        elif not isinstance(meta.get(wire.META_CLIENT_CAPABILITIES), dict):
            out.append(_v("META-04", "a request without _meta clientCapabilities", f))
    return out


# --- resultType (DIGEST §3): what the client understood ---


def _final_results(x: ClientExchange) -> dict[str, tuple[int, dict[str, Any], bool]]:
    """Per method, the last answer the client got to one of its requests, when it was a result
    (with whether it came on a legacy connection)."""
    out: dict[str, tuple[int, dict[str, Any], bool]] = {}
    for f in x.requests():
        got = x.reply(f)
        if got is None:
            continue
        i, msg = got
        if isinstance(msg, dict) and isinstance(msg.get("result"), dict):
            out[f.method or ""] = (i, msg["result"], x.is_legacy(f))
        else:
            out.pop(f.method or "", None)
    return out


def _readings(x: ClientExchange) -> Iterator[tuple[int, str, str, int, dict[str, Any], bool]]:
    finals = _final_results(x)
    for index, r in x.readings:
        step, outcome = r.get("step"), r.get("outcome")
        if isinstance(step, str) and isinstance(outcome, str) and step in finals:
            send_index, result, legacy = finals[step]
            yield index, step, outcome, send_index, result, legacy


@rule("RT-04", "MUST", "a resultType the client does not recognise is treated as invalid")
def rt_04(x: ClientExchange) -> list[Violation]:
    out = []
    for index, step, outcome, send_index, result, _legacy in _readings(x):
        rtype = result.get("resultType", _MISSING)
        if rtype is not _MISSING and rtype not in CORE_RESULT_TYPES and outcome in CORE_RESULT_TYPES:
            out.append(_v("RT-04", f"a result with resultType {rtype!r} was read as {outcome!r}", index=index,
                          method=step, probe=_probe_of(x, send_index), detail=f"answer at event {send_index}"))
    return out


@rule("RT-05", "MUST", 'a result without resultType from an earlier-revision server is read as "complete"')
def rt_05(x: ClientExchange) -> list[Violation]:
    out = []
    for index, step, outcome, send_index, result, legacy in _readings(x):
        if legacy and "resultType" not in result and outcome != "complete":
            out.append(_v("RT-05", f"a result without resultType was read as {outcome!r}", index=index,
                          method=step, probe=_probe_of(x, send_index), detail=f"answer at event {send_index}"))
    return out


# --- MRTR (DIGEST §8) ---


@rule("MRTR-09", "MUST", "an MRTR retry has a different id from the request it retries")
def mrtr_09(x: ClientExchange) -> list[Violation]:
    return [_v("MRTR-09", "the retry reuses the id of the request it retries", retry,
               detail=f"id {retry.message['id']!r}")
            for first, _result, retry in x.retries() if _same_id(first.message["id"], retry.message["id"])]


@rule("MRTR-10", "MUST", "the retry echoes requestState exactly, and leaves it out when none was given")
def mrtr_10(x: ClientExchange) -> list[Violation]:
    out = []
    for first, result, retry in x.retries():
        given = result.get("requestState", _MISSING)
        echoed = retry.params.get("requestState", _MISSING)
        probe = _probe_of(x, (x.reply(first) or (None, None))[0])
        if given is _MISSING:
            if echoed is not _MISSING:
                out.append(_v("MRTR-10", "the retry carries a requestState the server never gave", retry, probe=probe))
        elif isinstance(given, str):
            if echoed is _MISSING:
                out.append(_v("MRTR-10", "the retry leaves out the requestState it was given", retry, probe=probe,
                              detail=f"{len(given)} characters"))
            elif not (isinstance(echoed, str) and echoed == given):
                out.append(_v("MRTR-10", "the retry changes the requestState it was given", retry, probe=probe))
    return out


@rule("MRTR-11", "MUST", "a retry answers every input request of a kind the client declared")
def mrtr_11(x: ClientExchange) -> list[Violation]:
    out = []
    for first, result, retry in x.retries():
        requests = result.get("inputRequests")
        if not isinstance(requests, dict):
            continue
        caps = (first.params.get("_meta") or {}).get(wire.META_CLIENT_CAPABILITIES)
        caps = caps if isinstance(caps, dict) else {}
        needed = [k for k, r in requests.items()
                  if isinstance(r, dict) and _INPUT_KIND_CAPABILITY.get(r.get("method", "")) in caps]
        answers = retry.params.get("inputResponses")
        missing = [k for k in needed if not (isinstance(answers, dict) and k in answers)]
        if missing:
            out.append(_v("MRTR-11", "the retry does not answer the input requests it was given", retry,
                          detail="missing " + ", ".join(repr(k) for k in missing)))
    return out


@rule("MRTR-12", "MUST", "inputResponses and requestState go only on the retry of the request they came from")
def mrtr_12(x: ClientExchange) -> list[Violation]:
    allowed: dict[str, set[int]] = {}
    for _first, result, retry in x.retries():
        state = result.get("requestState")
        if isinstance(state, str) and state:
            allowed.setdefault(state, set()).add(retry.index)
    minted = {result.get("requestState") for f in x.requests() if (result := x.result_of(f)) is not None
              and result.get("resultType") == "input_required" and isinstance(result.get("requestState"), str)}
    out = []
    for f in x.requests():
        state = f.params.get("requestState")
        if isinstance(state, str) and state and state in minted and f.index not in allowed.get(state, set()):
            out.append(_v("MRTR-12", "a requestState is sent on a request that does not retry its own call", f))
    return out


# --- version negotiation (DIGEST §5) ---


@rule("VER-03", "SHOULD", "after -32022 the client retries only with a version the server listed")
def ver_03(x: ClientExchange) -> list[Violation]:
    out = []
    for f in x.requests():
        got = x.reply(f)
        if got is None or not isinstance(got[1], dict):
            continue
        err = got[1].get("error")
        if not (isinstance(err, dict) and err.get("code") == wire.UNSUPPORTED_PROTOCOL_VERSION):
            continue
        # A retry is the client's very next request on that process: a later call of the same
        # method is the job moving on (the Python SDK lists tools inside call_tool), not a retry.
        retry = x.next_request(f, same_method=False)
        if retry is None or retry.method != f.method or not _same_call(f.params, retry.params):
            continue
        version = (retry.params.get("_meta") or {}).get(wire.META_PROTOCOL_VERSION)
        data = err.get("data")
        supported = data.get("supported") if isinstance(data, dict) else None
        if isinstance(supported, list):
            if version not in supported:
                out.append(_v("VER-03", "after -32022 the retry uses a version the server did not list", retry,
                              probe=_probe_of(x, got[0]), detail=f"{version!r} not in {supported!r}"))
        elif version == (f.params.get("_meta") or {}).get(wire.META_PROTOCOL_VERSION):
            out.append(_v("VER-03", "after -32022 the retry uses the very version that was refused", retry,
                          probe=_probe_of(x, got[0]), detail=repr(version)))
    return out


# --- cancellation (DIGEST §11) ---


@rule("CAN-03", "MUST", "a cancellation names a request the client issued")
def can_03(x: ClientExchange) -> list[Violation]:
    out = []
    for f in x.frames:
        if f.method != "notifications/cancelled":
            continue
        rid = f.params.get("requestId")
        if not any(r.index < f.index and r.proc == f.proc and _same_id(r.message["id"], rid) for r in x.requests()):
            out.append(_v("CAN-03", "a cancellation names a request the client never sent", f, detail=repr(rid)))
    return out


# --- Streamable HTTP (DIGEST §7) ---


def _header(headers: dict[str, str] | None, name: str) -> str | None:
    for k, v in (headers or {}).items():
        if k.lower() == name.lower():
            return v
    return None


@rule("HTTP-03", "MUST", "every POST has an Accept header listing application/json and text/event-stream")
def http_03(x: ClientExchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out = []
    for f in x.frames:
        accept = (_header(f.event.headers, "Accept") or "").lower()
        if "application/json" not in accept or "text/event-stream" not in accept:
            out.append(_v("HTTP-03", "a POST whose Accept header does not list both media types", f,
                          detail=repr(_header(f.event.headers, "Accept"))))
    return out


@rule("HDR-06", "MUST", "an Mcp-Name value that is not plain safe ASCII is sent base64-encoded (=?base64?...?=)")
def hdr_06(x: ClientExchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out = []
    for f in x.requests():
        name_field = wire.NAME_HEADER_FIELD.get(f.method or "")
        value = f.params.get(name_field) if name_field else None
        sent = _header(f.event.headers, "Mcp-Name")
        if not isinstance(value, str) or sent is None or wire.encode_header_value(value) == value:
            continue
        try:
            decoded = wire.decode_header_value(sent)
        except ValueError:
            decoded = None
        if sent == value or decoded != value:
            out.append(_v("HDR-06", "an Mcp-Name value that needs encoding was not sent in the base64 form", f,
                          detail=f"body {value!r}, header {sent!r}"))
    return out


# --- the client survives what it is sent (UNSPEC: no crash, no hang) ---


@rule("CLIENT-LIVENESS", "HEURISTIC", "the client finishes its job: it exits by itself, with status 0")
def client_liveness(x: ClientExchange) -> list[Violation]:
    client_events = [(i, e) for i, e in enumerate(x.events) if e.proc == 0]
    timeout = next((i for i, e in client_events if e.kind == "timeout"), None)
    exit_at = next(((i, e) for i, e in client_events if e.kind == "exit"), None)
    hostile = [i for i, e in enumerate(x.events) if e.kind == "send" and ":" in e.note]
    probe = _probe_of(x, hostile[-1]) if hostile else None
    if timeout is not None:
        return [_v("CLIENT-LIVENESS", "the client hung: it did not finish its job in time", index=timeout,
                   probe=probe)]
    if exit_at is not None and exit_at[1].status not in (0, None):
        return [_v("CLIENT-LIVENESS", f"the client exited with status {exit_at[1].status}", index=exit_at[0],
                   probe=probe)]
    return []
