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
ExpectKind = Literal["error", "no-reply", "error-or-ignore", "not-complete", "result"]

MODERN: Final[frozenset[Era]] = frozenset({"modern"})
BOTH_ERAS: Final[frozenset[Era]] = frozenset({"modern", "legacy"})
STRENGTHS: Final[tuple[Strength, ...]] = ("MUST", "SHOULD", "HEURISTIC")


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule, located: `event_index` points into the judged transcript's events."""

    rule: str
    strength: Strength
    title: str
    detail: str = ""
    method: str | None = None
    event_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "strength": self.strength,
            "title": self.title,
            "detail": self.detail,
            "method": self.method,
            "event_index": self.event_index,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Violation:
        return cls(
            rule=data["rule"], strength=data["strength"], title=data["title"],
            detail=data.get("detail", ""), method=data.get("method"), event_index=data.get("event_index"),
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

    Passed to `judge` as `{send_event_index: Expectation}`.

    kind:
      - "error": a JSON-RPC error must come back; its code in `codes` and (HTTP) its status in
        `statuses`, when those are non-empty.
      - "no-reply": nothing may answer (a notification). Over HTTP: 202 with an empty body, or a
        4xx whose optional error body has no id (HTTP-05); `statuses` narrows it.
      - "error-or-ignore": the spec leaves the reaction open (UNSPEC); only survival is judged.
      - "not-complete": anything but a successful "complete" result (e.g. tampered requestState,
        MRTR-13: an error or a fresh input_required are both fine).
      - "result": a successful result must come back (e.g. an MRTR retry served by another process).
    rule/strength: what a wrong reaction is reported as (the rule the frame probes).
    sentinel: also judge liveness: the next well-formed request after this frame on the same
      process must be answered properly; failing that is HEURISTIC under `rule` (DIGEST 18/§15 robustness).
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

    def __post_init__(self) -> None:
        # Callers pass lists or sets from JSON; keep the dataclass hashable and comparable.
        object.__setattr__(self, "codes", frozenset(self.codes))
        object.__setattr__(self, "statuses", frozenset(self.statuses))
        object.__setattr__(self, "eras", frozenset(self.eras))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "rule": self.rule, "codes": sorted(self.codes),
            "statuses": sorted(self.statuses), "strength": self.strength, "mutation": self.mutation,
            "sentinel": self.sentinel, "eras": sorted(self.eras),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Expectation:
        return cls(
            kind=data["kind"], rule=data["rule"], codes=frozenset(data.get("codes", ())),
            statuses=frozenset(data.get("statuses", ())), strength=data.get("strength", "MUST"),
            mutation=data.get("mutation"), sentinel=data.get("sentinel", True),
            eras=frozenset(data.get("eras", MODERN)),
        )


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
