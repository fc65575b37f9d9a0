"""The oracle's vocabulary: what a violation is, what a rule is, what a caller may expect (the
one `Expectation`, defined below the strategies that draw malformed frames, re-exported here).

Kept apart from the rules so that Locust users and the campaign runner can build and compare
findings without importing any rule module, and so that every rule module imports only this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from mcp_tempest.strategies.expectation import (  # noqa: F401 - the oracle's vocabulary, re-exported
    BOTH_ERAS,
    FOUR_XX,
    MODERN,
    UNSPEC_REACTIONS,
    Era,
    Expectation,
    ExpectKind,
    Strength,
)

if TYPE_CHECKING:
    from mcp_tempest.fuzz.oracle.exchange import Exchange

Scope = Literal["pair", "transcript"]
STRENGTHS: Final[tuple[Strength, ...]] = ("MUST", "SHOULD", "HEURISTIC")

# Rules a probe frame breaks that bind the client alone (or bind the server only for what it
# writes itself): the server's duty toward such a frame is JSON-RPC 2.0's error response, which
# RPC-01 brings in. RPC-13 (a request without params) falls under META-04, as DIGEST says.
_CLIENT_FRAMING_RULES: Final = frozenset({
    "RPC-01", "RPC-02", "RPC-03", "RPC-04", "RPC-09", "STDIO-01", "STDIO-02", "STDIO-04",
})
_DUTY_OF: Final[dict[str, str]] = {"RPC-13": "META-04"}


Signature = tuple[str, str, str]


def signature(rule: str, reaction: str, title: str, probe: str | None) -> Signature:
    """One bug as a replay must see it again: the duty broken, the server's reaction (the title
    when no reaction is worded apart) and the probe that provoked it ("" without one)."""
    return (rule, reaction or title, probe or "")


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

    `reaction` is what the server did, worded without the probe ("JSON that is not a valid
    request got no reply"): with `rule` it is the behaviour a finding is filed under, so thirteen
    mutations that meet one code path of the server are one finding, not thirteen. Empty when
    the title already names the behaviour alone.
    """

    rule: str
    strength: Strength
    title: str
    detail: str = ""
    method: str | None = None
    event_index: int | None = None
    probe: str | None = None
    probe_rule: str | None = None
    reaction: str = ""

    def signature(self, mutation: str | None = None) -> Signature:
        """This violation as a bug (`signature`); `mutation` is the case's, for a violation that
        names no probe of its own (as a finding's evidence takes it)."""
        return signature(self.rule, self.reaction, self.title, self.probe or mutation)

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
            **({"reaction": self.reaction} if self.reaction else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Violation:
        return cls(
            rule=data["rule"], strength=data["strength"], title=data["title"],
            detail=data.get("detail", ""), method=data.get("method"), event_index=data.get("event_index"),
            probe=data.get("probe"), probe_rule=data.get("probe_rule"), reaction=data.get("reaction") or "",
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
