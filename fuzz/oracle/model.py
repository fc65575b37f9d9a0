"""The oracle's vocabulary: what a violation is, what a rule is, what a caller may expect.

Kept apart from the rules so that Locust users and the campaign runner can build and compare
findings without importing any rule module, and so that every rule module imports only this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from fuzz.oracle.exchange import Exchange

Strength = Literal["MUST", "SHOULD", "HEURISTIC"]
Era = Literal["modern", "legacy"]
Scope = Literal["pair", "transcript"]
ExpectKind = Literal[
    # the reply kinds of strategies.malformed.Expect, with the same meaning:
    "error", "error-or-ignore", "no-reply", "error-or-input-required", "error-or-as-valid", "as-valid", "any",
    "error-or-refusal",
    # and three the properties need beyond malformed frames:
    "not-complete", "result", "rejected",
]
FOUR_XX: Final = frozenset(range(400, 500))

MODERN: Final[frozenset[Era]] = frozenset({"modern"})
BOTH_ERAS: Final[frozenset[Era]] = frozenset({"modern", "legacy"})
STRENGTHS: Final[tuple[Strength, ...]] = ("MUST", "SHOULD", "HEURISTIC")

# Rules a probe frame breaks that bind the client alone (or bind the server only for what it
# writes itself): the server's duty toward such a frame is JSON-RPC 2.0's error response, which
# RPC-01 brings in. RPC-13 (a request without params) falls under META-04, as DIGEST says.
_CLIENT_FRAMING_RULES: Final = frozenset({
    "RPC-01", "RPC-02", "RPC-03", "RPC-04", "RPC-09", "STDIO-01", "STDIO-02", "STDIO-04",
})
_DUTY_OF: Final[dict[str, str]] = {"RPC-13": "META-04"}
# Probed rules whose server-side reaction DIGEST marks UNSPEC: the reaction is never judged
# (only survival is). RPC-05: a duplicate in-flight id; RPC-11: a batch array.
UNSPEC_REACTIONS: Final = frozenset({"RPC-05", "RPC-11"})


def server_duty(probe_rule: str) -> str:
    """The server's own duty when it reacts wrongly to a frame that breaks `probe_rule`."""
    if probe_rule in _CLIENT_FRAMING_RULES:
        return "RPC-01"
    return _DUTY_OF.get(probe_rule, probe_rule)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule, located: `event_index` points into the judged transcript's events.

    `rule` is always the server's own duty that was broken. When the violation is the server's
    reaction to a malformed frame, `probe` names the mutation that made the frame and
    `probe_rule` the rule the frame itself breaks (a duty of the client): a person fixing the
    server reads `rule`, and `probe`/`probe_rule` say how the fuzzer provoked it.
    """

    rule: str
    strength: Strength
    title: str
    detail: str = ""
    method: str | None = None
    event_index: int | None = None
    probe: str | None = None
    probe_rule: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "strength": self.strength,
            "title": self.title,
            "detail": self.detail,
            "method": self.method,
            "event_index": self.event_index,
            "probe": self.probe,
            "probe_rule": self.probe_rule,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Violation:
        return cls(
            rule=data["rule"], strength=data["strength"], title=data["title"],
            detail=data.get("detail", ""), method=data.get("method"), event_index=data.get("event_index"),
            probe=data.get("probe"), probe_rule=data.get("probe_rule"),
        )


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered check. `scope="pair"` rules judge one request and its answers in isolation,
    so the Locust fast path (`judge_response`) runs only those."""

    id: str
    strength: Strength
    eras: frozenset[Era]
    description: str
    check: Callable[[Exchange], list[Violation]]
    scope: Scope = "pair"


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the caller knows the server must do with one frame it sent (usually a malformed one).

    Passed to `judge` as `{send_event_index: Expectation}`; `from_case` converts a
    `strategies.malformed.MalformedCase` (or its `Expect`) for one transport.

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
      - "any": anything; only survival is judged.
      - "not-complete": anything but a successful complete result, silence included (a
        tampered requestState, MRTR-13; a null id, RPC-04).
      - "result": a result (an MRTR retry served by another process, MRTR-18).
      - "rejected": an error, or a result with isError true (invalid tool input, DIGEST 18.2).
    rule: the rule the frame probes (a wrong reaction is reported under `server_duty(rule)`,
      with `rule` as the violation's `probe_rule`); strength: how strong that deviation is.
    served_strength: the strength of a success reply where none is allowed (default: strength).
    forbid_headers: response headers (any case) that must not come back (e.g. Mcp-Session-Id).
    sentinel: also judge liveness: the next well-formed request after this frame on the same
      process must be answered properly; failing that is HEURISTIC under `rule`.
    eras: the campaign eras in which this expectation holds.
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
    modern_only: bool = False  # holds for a modern-only server; a dual-era one may read the frame as legacy

    def __post_init__(self) -> None:
        # Callers pass lists or sets from JSON; keep the dataclass hashable and comparable.
        object.__setattr__(self, "codes", frozenset(self.codes))
        object.__setattr__(self, "statuses", frozenset(self.statuses))
        object.__setattr__(self, "eras", frozenset(self.eras))
        object.__setattr__(self, "forbid_headers", frozenset(h.lower() for h in self.forbid_headers))

    def default_statuses(self) -> frozenset[int]:
        """The HTTP statuses judged acceptable when `statuses` is empty (as strategies.malformed does)."""
        if self.statuses:
            return self.statuses
        if self.kind == "error":
            return FOUR_XX
        if self.kind in ("error-or-ignore", "no-reply"):
            return FOUR_XX | {202}
        if self.kind == "error-or-refusal":
            return FOUR_XX
        return frozenset()

    @classmethod
    def from_case(cls, case: Any, transport: str, *, sentinel: bool = True, dual: bool = False) -> Expectation:
        """From a `strategies.malformed.MalformedCase` (duck-typed: `.expect`, `.rule`, `.mutation`)."""
        return cls.from_expect(case.expect, case.rule, transport, mutation=case.mutation, sentinel=sentinel,
                               dual=dual)

    @classmethod
    def from_expect(cls, expect: Any, rule: str, transport: str, *, mutation: str | None = None,
                    sentinel: bool = True, dual: bool = False) -> Expectation:
        """From a `strategies.malformed.Expect` for one transport. UNSPEC becomes HEURISTIC, a
        "modern-only" expectation holds only in the modern era, "client-rejects" (a server->client
        frame) judges nothing but survival.

        A "modern-only" expectation (a legacy method, a legacy version, no MCP-Protocol-Version
        header) is marked `modern_only`; what a dual-era server may do with such a frame is
        decided by the oracle in one place (`fuzz.oracle.exchange.dual_era_excuses`), the same
        way for every rule. `dual` is accepted for older callers and no longer changes anything.
        """
        kind = expect.reply if expect.reply != "client-rejects" else "any"
        codes = expect.allowed_codes(transport) if hasattr(expect, "allowed_codes") else expect.codes
        strength = _strength(expect.strength)
        served = getattr(expect, "served_strength", None)
        modern_only = getattr(expect, "only_if", None) == "modern-only"
        statuses = frozenset(expect.http_statuses or ())
        if rule in UNSPEC_REACTIONS:
            kind, strength, served, statuses = "any", "HEURISTIC", None, frozenset()
        # JSON-RPC and stdio framing hold in both eras; everything else is 2026-07-28 semantics.
        era_free = rule.startswith(("RPC-", "STDIO-")) and rule != "RPC-13"
        eras = BOTH_ERAS if era_free and not modern_only else MODERN
        return cls(
            kind=kind, rule=rule, codes=frozenset(codes or ()), statuses=statuses,
            strength=strength, mutation=mutation, sentinel=sentinel, eras=eras,  # type: ignore[arg-type]
            forbid_headers=frozenset(getattr(expect, "forbid_headers", ()) or ()),
            served_strength=_strength(served) if served is not None else None, modern_only=modern_only,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "rule": self.rule, "codes": sorted(self.codes),
            "statuses": sorted(self.statuses), "strength": self.strength, "mutation": self.mutation,
            "sentinel": self.sentinel, "eras": sorted(self.eras), "forbid_headers": sorted(self.forbid_headers),
            **({"served_strength": self.served_strength} if self.served_strength is not None else {}),
            **({"modern_only": True} if self.modern_only else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Expectation:
        return cls(
            kind=data["kind"], rule=data["rule"], codes=frozenset(data.get("codes", ())),
            statuses=frozenset(data.get("statuses", ())), strength=data.get("strength", "MUST"),
            mutation=data.get("mutation"), sentinel=data.get("sentinel", True),
            eras=frozenset(data.get("eras", MODERN)), forbid_headers=frozenset(data.get("forbid_headers", ())),
            served_strength=data.get("served_strength"), modern_only=bool(data.get("modern_only", False)),
        )


def _strength(text: str) -> Strength:
    """A catalogue strength as a finding's: UNSPEC (or anything unknown) is at most a HEURISTIC."""
    return {"MUST": "MUST", "SHOULD": "SHOULD"}.get(text, "HEURISTIC")  # type: ignore[return-value]


@dataclass(slots=True)
class Registry:
    """Rule id -> Rule, filled by the `rule` decorator as rule modules are imported."""

    rules: dict[str, Rule] = field(default_factory=dict)

    def rule(
        self,
        rule_id: str,
        strength: Strength,
        description: str,
        *,
        eras: frozenset[Era] = MODERN,
        scope: Scope = "pair",
    ) -> Callable[[Callable[[Exchange], list[Violation]]], Callable[[Exchange], list[Violation]]]:
        def register(fn: Callable[[Exchange], list[Violation]]) -> Callable[[Exchange], list[Violation]]:
            if rule_id in self.rules:
                raise ValueError(f"rule {rule_id} registered twice")
            self.rules[rule_id] = Rule(rule_id, strength, frozenset(eras), description, fn, scope)
            return fn

        return register


REGISTRY: Final = Registry()
RULES: Final[dict[str, Rule]] = REGISTRY.rules
rule: Final = REGISTRY.rule
