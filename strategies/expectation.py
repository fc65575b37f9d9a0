"""The one description of how a server must react to a frame we send it, from the strategy that
draws a malformed frame to the oracle that judges the reply.

It lives here, below both: the catalogue of mutations (`strategies.malformed`) states each
mutation's expected reaction once, for every transport; a case step carries it as it is (and a
replay file its JSON); the oracle (`fuzz.oracle.expect`) is the only code that judges a reply
against it. Two types for one idea, one per layer, drift apart and each judges in its own way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final, Literal

Strength = Literal["MUST", "SHOULD", "HEURISTIC"]
Era = Literal["modern", "legacy"]
ExpectKind = Literal[
    # the reactions to a malformed frame:
    "error", "error-or-ignore", "no-reply", "error-or-input-required", "error-or-as-valid", "as-valid", "any",
    "error-or-refusal",
    # a server->client frame: the client must reject it; a server is judged on survival only
    "client-rejects",
    # and three the properties need beyond malformed frames:
    "not-complete", "result", "rejected",
]
FOUR_XX: Final = frozenset(range(400, 500))
MODERN: Final[frozenset[Era]] = frozenset({"modern"})
BOTH_ERAS: Final[frozenset[Era]] = frozenset({"modern", "legacy"})
# Probed rules whose server-side reaction DIGEST marks UNSPEC: the reaction is never judged
# (only survival is). RPC-05: a duplicate in-flight id; RPC-11: a batch array.
UNSPEC_REACTIONS: Final = frozenset({"RPC-05", "RPC-11"})


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the server must do with one frame we sent (usually a malformed one).

    The oracle takes them as `{send_event_index: Expectation}`, each resolved for the transport
    it went over (`for_transport`).

    kind (a reply is a JSON-RPC result or error; "silence" is no reply at all, on HTTP a body
    without a JSON-RPC message):
      - "error": an error; its code in `codes`, its HTTP status in `statuses` (default 4xx).
      - "error-or-refusal": an error, as "error"; over HTTP a 4xx without a JSON-RPC body is a
        refusal too. Silence on stdio is a deviation at `strength`, a result at `served_strength`
        (JSON-RPC 2.0 answers a frame it cannot serve with an error; DIGEST restates the format,
        RPC-01, not the duty to answer, so silence is weaker than serving the frame).
      - "error-or-ignore": an error or silence, never a result (HTTP default: 202 or 4xx).
      - "no-reply": silence (HTTP: 202, or a 4xx whose optional error body has no id, HTTP-05).
      - "error-or-input-required": an error or a fresh input_required result (MRTR-15/16).
      - "error-or-as-valid": an error or a result, not silence.
      - "as-valid": a reply, whatever it is (error codes are not judged).
      - "any" and "client-rejects": anything; only survival is judged.
      - "not-complete": anything but a successful complete result, silence included (a
        tampered requestState, MRTR-13; a null id, RPC-04).
      - "result": a result (an MRTR retry served by another process, MRTR-18).
      - "rejected": an error, or a result with isError true (invalid tool input, DIGEST 18.2).
    rule: the rule the frame probes (a wrong reaction is reported under the server's duty toward
      it, with `rule` as the violation's `probe_rule`); strength: how strong that deviation is
      (where the spec leaves the reaction open, HEURISTIC at most).
    duty: the server's duty toward this frame when the probed rule does not name it (an invalid
      logLevel breaks the request schema, RPC-13, and DIGEST 13 says it SHOULD get -32602: LOG-03);
      None: the duty the probed rule maps to (`fuzz.oracle.model.server_duty`).
    codes: the error codes allowed; http_codes: the ones over HTTP where they differ (-32020 for a
      header/body mismatch), folded into `codes` by `for_transport`.
    statuses: the HTTP statuses allowed (empty: the kind's default, see `default_statuses`).
    served_strength: the strength of a success reply where none is allowed (default: strength).
    forbid_headers: response headers (any case) that must not come back (e.g. Mcp-Session-Id).
    sentinel: also judge liveness: the next well-formed request after this frame on the same
      process must be answered properly; failing that is HEURISTIC under `rule`.
    eras: the campaign eras in which this expectation holds.
    modern_only: holds for a modern-only server; a dual-era one may read the frame as legacy.
    note: why the spec asks for this reaction (shown by `frames --list`).
    """

    kind: ExpectKind
    rule: str
    codes: frozenset[int] = frozenset()
    statuses: frozenset[int] = frozenset()
    strength: Strength = "MUST"
    mutation: str | None = None
    sentinel: bool = True
    eras: frozenset[Era] = MODERN
    forbid_headers: frozenset[str] = frozenset()
    served_strength: Strength | None = None
    modern_only: bool = False
    http_codes: frozenset[int] | None = None
    note: str = ""
    duty: str | None = None

    def __post_init__(self) -> None:
        # Callers pass lists or sets from JSON; keep the dataclass hashable and comparable.
        object.__setattr__(self, "codes", frozenset(self.codes))
        object.__setattr__(self, "statuses", frozenset(self.statuses))
        object.__setattr__(self, "eras", frozenset(self.eras))
        object.__setattr__(self, "forbid_headers", frozenset(h.lower() for h in self.forbid_headers))
        if self.http_codes is not None:
            object.__setattr__(self, "http_codes", frozenset(self.http_codes))

    def for_transport(self, transport: str) -> Expectation:
        """The expectation for a frame sent over `transport` ("stdio" or "http")."""
        if self.http_codes is None:
            return self
        return replace(self, codes=self.http_codes if transport == "http" else self.codes, http_codes=None)

    def probing(self, rule: str, mutation: str) -> Expectation:
        """This reaction as the expectation of one named mutation that breaks `rule`.

        Where DIGEST leaves the reaction to `rule` open (UNSPEC_REACTIONS) only survival is judged.
        JSON-RPC and stdio framing hold in both eras; everything else is 2026-07-28 semantics."""
        era_free = rule.startswith(("RPC-", "STDIO-")) and rule != "RPC-13"
        bound = replace(self, rule=rule, mutation=mutation,
                        eras=BOTH_ERAS if era_free and not self.modern_only else MODERN)
        if rule in UNSPEC_REACTIONS:
            return replace(bound, kind="any", strength="HEURISTIC", served_strength=None, statuses=frozenset())
        return bound

    def default_statuses(self) -> frozenset[int]:
        """The HTTP statuses judged acceptable when `statuses` is empty."""
        if self.statuses:
            return self.statuses
        if self.kind in ("error", "error-or-refusal"):
            return FOUR_XX
        if self.kind in ("error-or-ignore", "no-reply"):
            return FOUR_XX | {202}
        return frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "rule": self.rule, "codes": sorted(self.codes),
            "statuses": sorted(self.statuses), "strength": self.strength, "mutation": self.mutation,
            "sentinel": self.sentinel, "eras": sorted(self.eras), "forbid_headers": sorted(self.forbid_headers),
            **({"served_strength": self.served_strength} if self.served_strength is not None else {}),
            **({"modern_only": True} if self.modern_only else {}),
            **({"http_codes": sorted(self.http_codes)} if self.http_codes is not None else {}),
            **({"note": self.note} if self.note else {}),
            **({"duty": self.duty} if self.duty else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Expectation:
        http_codes = data.get("http_codes")
        return cls(
            kind=data["kind"], rule=data["rule"], codes=frozenset(data.get("codes", ())),
            statuses=frozenset(data.get("statuses", ())), strength=data.get("strength", "MUST"),
            mutation=data.get("mutation"), sentinel=data.get("sentinel", True),
            eras=frozenset(data.get("eras", MODERN)), forbid_headers=frozenset(data.get("forbid_headers", ())),
            served_strength=data.get("served_strength"), modern_only=bool(data.get("modern_only", False)),
            http_codes=frozenset(http_codes) if http_codes is not None else None, note=data.get("note", ""),
            duty=data["duty"] if isinstance(data.get("duty"), str) and data["duty"] else None,
        )
