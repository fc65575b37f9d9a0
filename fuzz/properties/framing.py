"""Framing and robustness: a malformed frame, then a liveness sentinel on the same process.

Each example sends one to three malformed frames, each followed by a sentinel (a well-formed
`server/discover`). The reaction to each malformed frame is judged against the expectation its
mutation carries (answer with an error, or ignore, as the rule says); the sentinel's answer is
judged like any answer (the server is alive, wrote only JSON-RPC, and answers correctly). The
frames go to the warm process, one example after another: start-up is paid once, not per frame.

Mutations come from the strategies' malformed catalogue when it is installed, with its expected
reactions; a small built-in catalogue covers the same ground otherwise.
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


def malformed_frames(transport: str) -> st.SearchStrategy[Malformed]:
    """The strategies' catalogue when present, else the built-in one, as Malformed values."""
    try:
        from strategies import malformed as catalogue  # type: ignore[attr-defined]
    except ImportError:
        catalogue = None
    if catalogue is not None and hasattr(catalogue, "malformed_cases"):
        return catalogue.malformed_cases(transport).map(_from_catalogue)  # pragma: no cover - adapter
    makers = _builtin(transport)
    rid = st.one_of(st.integers(1, 10_000), st.text(alphabet="abcdef0123456789", min_size=1, max_size=8))
    text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", max_size=8)
    return st.builds(lambda make, r, t: make(r, t), st.sampled_from(makers), rid, text)


def _from_catalogue(item: Any) -> Malformed:  # pragma: no cover - adapter, see malformed_frames
    return item if isinstance(item, Malformed) else Malformed(**item)


class FramingProperty(Property):
    name = "framing"
    title = "malformed frames are answered or ignored as the rule says, and the server lives on"
    fresh_per_example = 0
    eras = frozenset({"modern"})

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        return st.builds(self._build, id_styles(), st.lists(malformed_frames(ctx.transport), min_size=1, max_size=3))

    def _build(self, id_style: str, items: list[Malformed]) -> Case:
        b = CaseBuilder(self.name, id_style=id_style, first_id=1_000_001)
        for m in items:
            b.add(Step(proc=0, frame=m.frame, raw=m.raw, headers=m.headers, wait=m.wait,  # type: ignore[arg-type]
                       label=m.name, expect=m.expect.to_json(), mutation=m.name))
            b.sentinel(0)
        return b.build(warm=[0])


PROPERTY = FramingProperty()
