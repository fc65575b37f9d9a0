"""A client case as plain data: what the scripted server answers to each request, in order.

Plain data so that a case is its own replay file: `ClientCase.to_json()` is what the stub
process reads, what a repro file stores and what shrinking makes smaller. No Hypothesis here.

The server answers the n-th request of a method with that method's n-th play; past the last
one it answers with the method's minimal complete result (`DEFAULT_RESULTS`). An MRTR retry is
just the next request of its method, so `input_required` rounds are consecutive plays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from mcp_tempest.targets.wire import LEGACY_VERSION, MODERN_VERSION

CASE_FORMAT: Final = "mcp-tempest/client-case-1"

# A hostile frame, or a way of answering, and the DIGEST rule it probes on the client's side.
# The two result mutations keep the names strategies.malformed gives them (direction to-client).
PROBES: Final[dict[str, tuple[str, str]]] = {
    "result-missing-resulttype": ("RT-05", "a result without resultType"),
    "result-unknown-resulttype": ("RT-04", "a result whose resultType is not a core value"),
    "legacy-server": ("RT-05", "a 2025-11-25 server: no server/discover, an initialize handshake, no resultType"),
    "input-requests-malformed": ("MRTR-04", "an input_required result whose inputRequests fit no InputRequest"),
    "request-state-empty": ("MRTR-10", "an input_required result whose requestState is the empty string"),
    "request-state-oversized": ("MRTR-10", "an input_required result with a very long requestState"),
    "request-state-not-string": ("MRTR-10", "an input_required result whose requestState is not a string"),
    "error-missing-capability": ("META-05", "-32021 MissingRequiredClientCapability"),
    "error-unsupported-version": ("VER-03", "-32022 UnsupportedProtocolVersion"),
    "error-invalid-params": ("META-04", "-32602 Invalid params"),
    "error-without-data": ("VER-03", "an MCP error without its required data"),
    "response-null-id": ("RPC-04", "a response whose id is null, before the real one"),
    "response-unknown-id": ("RPC-06", "a response to an id the client never sent, before the real one"),
    "response-duplicate": ("RPC-06", "the same response twice"),
    "stdout-noise": ("STDIO-03", "a line that is not JSON, before the real response"),
    "frame-split": ("STDIO-02", "a frame cut in two by an embedded raw newline, before the real response"),
    "server-request": ("RPC-12", "a 2025-era JSON-RPC request from the server (elicitation/create)"),
}
BEFORE_KINDS: Final = ("response-null-id", "response-unknown-id", "stdout-noise", "frame-split", "server-request")

SERVER_INFO: Final = {"name": "mcp-tempest-client-mode", "version": "0.1.0"}
_META = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
_CACHE = {"ttlMs": 0, "cacheScope": "private"}

# The answer when a method has no (more) plays: minimal, valid, and the same every time.
DEFAULT_RESULTS: Final[dict[str, dict[str, Any]]] = {
    "server/discover": {
        "resultType": "complete", "supportedVersions": [MODERN_VERSION],
        "capabilities": {"tools": {}, "resources": {}, "prompts": {}}, **_CACHE, "_meta": _META,
    },
    "tools/list": {"resultType": "complete", "tools": [
        {"name": "echo", "inputSchema": {"type": "object"}}], **_CACHE, "_meta": _META},
    "tools/call": {"resultType": "complete", "content": [{"type": "text", "text": "ok"}], "_meta": _META},
    "resources/list": {"resultType": "complete", "resources": [], **_CACHE, "_meta": _META},
    "resources/templates/list": {"resultType": "complete", "resourceTemplates": [], **_CACHE, "_meta": _META},
    "resources/read": {"resultType": "complete", "contents": [{"uri": "tempest://r", "text": "r"}], **_CACHE,
                       "_meta": _META},
    "prompts/list": {"resultType": "complete", "prompts": [], **_CACHE, "_meta": _META},
    "prompts/get": {"resultType": "complete", "messages": [
        {"role": "user", "content": {"type": "text", "text": "hi"}}], "_meta": _META},
    "completion/complete": {"resultType": "complete", "completion": {"values": []}, "_meta": _META},
}


@dataclass(slots=True)
class Play:
    """How the server answers one request.

    kind: "result" (send `result` as is: complete, input_required, missing or unknown resultType)
      or "error" (`code`, `message`, `data`; data None means the error has no data member).
    probe: the PROBES name this play exercises, None for an ordinary valid answer.
    before: hostile frames (BEFORE_KINDS) written ahead of the answer; duplicate: answer twice.
    sse: over HTTP, answer on an SSE stream instead of a JSON body.
    hold: seconds the answer is kept back at most; on stdio it goes out after the client's next
      frame has been answered, over HTTP once the client's next request has arrived (or when the
      time is up), so two requests sent together are answered in
      reverse order and both are seen in flight at once (RPC-05).
    """

    kind: str
    result: dict[str, Any] | None = None
    code: int | None = None
    message: str = ""
    data: Any = None
    probe: str | None = None
    before: list[str] = field(default_factory=list)
    duplicate: bool = False
    sse: bool = False
    hold: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "result":
            out["result"] = self.result
        else:
            out.update(code=self.code, message=self.message)
            if self.data is not None:
                out["data"] = self.data
        for name in ("probe", "before", "duplicate", "sse", "hold"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Play:
        return cls(kind=data["kind"], result=data.get("result"), code=data.get("code"),
                   message=data.get("message", ""), data=data.get("data"), probe=data.get("probe"),
                   before=list(data.get("before", [])), duplicate=bool(data.get("duplicate", False)),
                   sse=bool(data.get("sse", False)), hold=float(data.get("hold", 0.0)))

    def probes(self) -> list[str]:
        """Every probe name in this play (its answer's, its hostile frames', a duplicate)."""
        out = [self.probe] if self.probe else []
        out.extend(self.before)
        if self.duplicate:
            out.append("response-duplicate")
        return out


# A server of an earlier revision (DIGEST §5.3): server/discover is an unknown method, `initialize`
# is the 2025-11-25 handshake, and results carry no resultType (RT-05 is about exactly these).
LEGACY_INITIALIZE_RESULT: Final = {
    "protocolVersion": LEGACY_VERSION, "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
    "serverInfo": SERVER_INFO,
}


def legacy_result(method: str) -> dict[str, Any] | None:
    """What a 2025-11-25 server answers to `method`: the default result without the 2026 fields."""
    if method == "initialize":
        return dict(LEGACY_INITIALIZE_RESULT)
    if method == "server/discover" or method not in DEFAULT_RESULTS:
        return None
    drop = ("resultType", "ttlMs", "cacheScope", "_meta")
    return {k: v for k, v in DEFAULT_RESULTS[method].items() if k not in drop}


@dataclass(slots=True)
class ClientCase:
    """One scripted server: method -> the plays for its successive requests.

    era "legacy": the server is a 2025-11-25 one (plays are not used): the client has to fall back
    to `initialize` and read results that carry no resultType as complete (RT-05).
    """

    plays: dict[str, list[Play]] = field(default_factory=dict)
    era: str = "modern"

    def __repr__(self) -> str:  # short: Hypothesis reprs every failing case, and a requestState may be 64 KiB
        if self.era != "modern":
            return f"ClientCase(era={self.era!r})"
        return "ClientCase(" + ", ".join(
            f"{m}=[{', '.join(p.probe or p.kind for p in ps)}]" for m, ps in self.plays.items()) + ")"

    def play_for(self, method: str, n: int) -> Play | None:
        """The answer to the n-th (0-based) request of `method`; None: the default answer."""
        plays = self.plays.get(method, [])
        return plays[n] if n < len(plays) else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": "client", "format": CASE_FORMAT,
                               "plays": {m: [p.to_json() for p in ps] for m, ps in self.plays.items()}}
        if self.era != "modern":
            out["era"] = self.era
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientCase:
        if data.get("mode") != "client":
            raise ValueError("not a client case (mode is not 'client')")
        era = data.get("era", "modern")
        if era not in ("modern", "legacy"):
            raise ValueError(f"unknown era {era!r}")
        return cls(plays={m: [Play.from_json(p) for p in ps] for m, ps in dict(data.get("plays", {})).items()},
                   era=era)
