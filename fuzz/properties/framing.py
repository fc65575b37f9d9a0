"""Framing and robustness: a malformed frame, then a liveness sentinel on the same process.

Each example sends one to three malformed frames, each followed by a sentinel (a well-formed
`server/discover`). The reaction to each malformed frame is judged against the expectation its
mutation carries (answer with an error, or ignore, as the rule says); the sentinel's answer is
judged like any answer (the server is alive, wrote only JSON-RPC, and answers correctly). The
frames go to the warm process, one example after another: start-up is paid once, not per frame.

Mutations come from the strategies' malformed catalogue (`strategies.malformed`, each with its
expected reaction), except those that need a live MRTR state (the mrtr property plays them for
real), plus a blank line on stdio, which the catalogue does not have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from fuzz.oracle.model import Expectation
from fuzz.properties.base import Context, Property
from fuzz.properties.case import Case, Step
from fuzz.properties.common import Call, CaseBuilder, id_styles
from targets import wire


@dataclass(frozen=True, slots=True)
class Malformed:
    """One malformed frame: what goes on the wire and what the server must do with it."""

    name: str
    frame: dict[str, Any] | None
    raw: bytes | None
    headers: dict[str, str] | None
    expect: Expectation
    wait: str = "none"


def _request(rid: int | str, method: str = "server/discover", **kw: Any) -> dict[str, Any]:
    return Call(method, **kw).frame(rid)


def _builtin(transport: str) -> list[Callable[[int | str, str], Malformed]]:
    """(request id, free text) -> a malformed frame. Kept small; the strategies' catalogue is wider."""
    rejections = frozenset({wire.INVALID_REQUEST, wire.INVALID_PARAMS, wire.METHOD_NOT_FOUND, wire.PARSE_ERROR})

    def not_json(rid: int | str, text: str) -> Malformed:
        return Malformed("not-json", None, b'{"jsonrpc": "2.0", "id": ' + text.encode()[:8] + b"\n", None,
                         Expectation("error-or-ignore", "RPC-01", mutation="not-json"))

    def blank_line(rid: int | str, text: str) -> Malformed:
        return Malformed("blank-line", None, b"\n", None, Expectation("error-or-ignore", "STDIO-02", mutation="blank-line"))

    def invalid_utf8(rid: int | str, text: str) -> Malformed:
        body = wire.dumps(_request(rid)).replace(b"server/discover", b"server/\xff\xfediscover")
        return Malformed("invalid-utf8", None, body + b"\n", None,
                         Expectation("error-or-ignore", "RPC-02", mutation="invalid-utf8"))

    def batch(rid: int | str, text: str) -> Malformed:
        body = wire.dumps([_request(rid), _request(f"{rid}-b")]) + b"\n"
        return Malformed("batch", None, body, None, Expectation("error-or-ignore", "RPC-11", mutation="batch"))

    def missing_meta(rid: int | str, text: str) -> Malformed:
        frame = _request(rid)
        frame["params"].pop("_meta")
        return Malformed("meta-missing", frame, None, None,
                         Expectation("error", "META-04", codes={wire.INVALID_PARAMS, wire.HEADER_MISMATCH},
                                     statuses={400} if transport == "http" else set(), mutation="meta-missing"),
                         wait="response")

    def missing_caps(rid: int | str, text: str) -> Malformed:
        frame = _request(rid)
        frame["params"]["_meta"].pop(wire.META_CLIENT_CAPABILITIES)
        return Malformed("meta-capabilities-missing", frame, None, None,
                         Expectation("error", "META-04", codes={wire.INVALID_PARAMS},
                                     statuses={400} if transport == "http" else set(),
                                     mutation="meta-capabilities-missing"), wait="response")

    def bad_version(rid: int | str, text: str) -> Malformed:
        frame = _request(rid, version="1900-01-01")
        return Malformed("meta-version-unsupported", frame, None, None,
                         Expectation("error", "META-06", codes={wire.UNSUPPORTED_PROTOCOL_VERSION},
                                     statuses={400} if transport == "http" else set(),
                                     mutation="meta-version-unsupported"), wait="response")

    def unknown_method(rid: int | str, text: str) -> Malformed:
        frame = _request(rid, method=f"gauntlet/x-{text or 'nothing'}")
        rule = "HDR-05" if transport == "http" else "DISC-07"
        return Malformed("method-unknown", frame, None, None,
                         Expectation("error", rule, codes={wire.METHOD_NOT_FOUND},
                                     statuses={404} if transport == "http" else set(), mutation="method-unknown"),
                         wait="response")

    def bad_jsonrpc(rid: int | str, text: str) -> Malformed:
        frame = _request(rid)
        frame["jsonrpc"] = "1.0"
        return Malformed("jsonrpc-version-wrong", frame, None, None,
                         Expectation("error", "RPC-01", codes=rejections, mutation="jsonrpc-version-wrong"),
                         wait="response")

    def unknown_notification(rid: int | str, text: str) -> Malformed:
        frame = {"jsonrpc": "2.0", "method": f"notifications/x-{text or 'nothing'}"}
        return Malformed("notification-unknown", frame, None, None,
                         Expectation("no-reply", "RPC-10", mutation="notification-unknown"))

    out = [not_json, invalid_utf8, batch, missing_meta, missing_caps, bad_version, unknown_method,
           bad_jsonrpc, unknown_notification]
    if transport == "stdio":
        out.append(blank_line)
    else:
        def header_version(rid: int | str, text: str) -> Malformed:
            frame = _request(rid)
            headers = wire.http_headers(frame)
            headers["MCP-Protocol-Version"] = "2025-11-25"
            return Malformed("header-version-mismatch", frame, None, headers,
                             Expectation("error", "HDR-01", codes={wire.HEADER_MISMATCH, wire.UNSUPPORTED_PROTOCOL_VERSION},
                                         statuses={400}, mutation="header-version-mismatch"), wait="response")

        def header_method(rid: int | str, text: str) -> Malformed:
            frame = _request(rid)
            headers = wire.http_headers(frame)
            headers["Mcp-Method"] = "tools/list"
            return Malformed("header-method-mismatch", frame, None, headers,
                             Expectation("error", "HDR-03", codes={wire.HEADER_MISMATCH}, statuses={400},
                                         mutation="header-method-mismatch"), wait="response")

        def header_method_missing(rid: int | str, text: str) -> Malformed:
            frame = _request(rid)
            headers = wire.http_headers(frame)
            headers.pop("Mcp-Method", None)
            return Malformed("header-method-missing", frame, None, headers,
                             Expectation("error", "HDR-02", codes={wire.HEADER_MISMATCH}, statuses={400},
                                         mutation="header-method-missing"), wait="response")

        out += [header_version, header_method, header_method_missing]
    return out


_CATALOGUE_CACHE: dict[str, st.SearchStrategy[list[Malformed]]] = {}
#: Malformed frames that need a live server's state; the mrtr property plays those for real.
_SKIP_LEVELS = frozenset({"retry"})
#: The catalogue has no frame that is only a line terminator; a server that reads an empty line
#: as end of input (STDIO-02) is a real bug class, so the framing property adds it.
EXTRA_STDIO = ("blank-line",)


def malformed_frames(transport: str) -> st.SearchStrategy[list[Malformed]]:
    """One malformed transmission (one or more frames) from the strategies' catalogue, or an extra."""
    cached = _CATALOGUE_CACHE.get(transport)
    if cached is not None:
        return cached
    from strategies import malformed as catalogue

    names = [n for n in catalogue.mutation_names(transport=transport)
             if catalogue.get_mutation(n).level not in _SKIP_LEVELS]
    cases = catalogue.any_malformed_case(transport=transport, names=names).map(
        lambda c: _from_catalogue(c, transport))
    extras = [make for make in _builtin(transport) if transport == "stdio" and make.__name__ == "blank_line"]
    strategy: st.SearchStrategy[list[Malformed]] = cases
    if extras:
        rid = st.integers(1, 10_000)
        strategy = st.one_of(cases, st.builds(lambda make, r: [make(r, "")], st.sampled_from(extras), rid))
    _CATALOGUE_CACHE[transport] = strategy
    return strategy


def _from_catalogue(case: Any, transport: str) -> list[Malformed]:
    """A `strategies.malformed.MalformedCase` as the frames to send, the first carrying the expectation."""
    expect = Expectation.from_case(case, transport)
    out: list[Malformed] = []
    for i, line in enumerate(case.lines):
        frame = case.frames[i] if case.frames is not None else None
        raw = line + case.terminator if transport == "stdio" else line
        headers = dict(case.http_headers[i]) if transport == "http" and case.http_headers else None
        readable = isinstance(frame, dict) and "method" in frame and _plain_id(frame.get("id"))
        out.append(Malformed(case.mutation, frame if readable else None, raw, headers,
                             expect if i == 0 else Expectation("any", case.rule, mutation=case.mutation),
                             wait="response" if readable else "none"))
    return out


def _plain_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


#: How long to wait for the reply to a malformed frame with a readable id before the sentinel
#: goes out (a server may answer it with a null id, which only the oracle can pair).
MALFORMED_REPLY_TIMEOUT = 1.0


class FramingProperty(Property):
    name = "framing"
    title = "malformed frames are answered or ignored as the rule says, and the server lives on"
    fresh_per_example = 0
    eras = frozenset({"modern"})

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        return st.builds(self._build, id_styles(), st.lists(malformed_frames(ctx.transport), min_size=1, max_size=3))

    def _build(self, id_style: str, items: list[list[Malformed]]) -> Case:
        b = CaseBuilder(self.name, id_style=id_style, first_id=1_000_001)
        for group_no, frames in enumerate(items):
            group = group_no if len(frames) > 1 else None  # a pair goes out together (in flight at once)
            for m in frames:
                b.add(Step(proc=0, frame=m.frame, raw=m.raw, headers=m.headers, wait=m.wait,  # type: ignore[arg-type]
                           label=m.name, expect=m.expect.to_json(), mutation=m.name, group=group,
                           timeout=MALFORMED_REPLY_TIMEOUT))
            b.sentinel(0)
        return b.build(warm=[0])


PROPERTY = FramingProperty()
