"""What a property is, and the registry the campaign, replay and pytest plugin share.

A property is three things: a strategy of cases (plain data), a relational check (what no
single-frame oracle rule can see: two answers that should be equal, a retry that should have
been served), and how many fresh processes one example needs. The judging of a run is always
"the oracle on the whole transcript, plus the property's own check", both during a campaign and
in a replay, so a replay cannot pass for a reason the campaign would have failed it.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Expectation, Violation
from mcp_tempest.fuzz.properties.case import Case
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.fuzz.properties.surface import Surface


@dataclass(slots=True)
class Context:
    """What a property may know about the target when it draws cases and judges runs."""

    transport: str  # "stdio" or "http"
    era: str = "modern"
    fresh_processes: bool = True
    surface: Surface = field(default_factory=Surface.reference)
    target: str = ""
    mutations: tuple[str, ...] = ()  # restrict malformed frames to these names (globs); () = all
    # The probe said "dual": the target also serves the legacy era, so frames outside the modern
    # protocol (legacy methods, no version claim or header) may be served by 2025-era rules.
    dual: bool = False
    # The start-of-run probe's DiscoverResult (its versions and capabilities), or None: what the
    # oracle compares a process's later answers with (SL-2: a locked process discovers nothing).
    discover: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """One named probe a campaign's coverage phase sends once, before any random example: a
    mutation, a header or method probe, an MRTR tampering. `case` is None when the probe cannot
    apply to this target, and `why_not` says why (no HTTP, no MRTR tool, ...)."""

    name: str
    rule: str
    case: Case | None
    why_not: str = ""
    parts: Any = None  # what Property.combine() needs to send this probe together with others


class Property(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    #: Fresh processes one example uses; 0 means it runs on a warm process, frame after frame.
    fresh_per_example: ClassVar[int] = 0
    #: Eras whose rules this property's frames and checks belong to.
    eras: ClassVar[frozenset[str]] = frozenset({"modern"})
    #: Relative share of the campaign budget (fresh-process properties cost more per example).
    weight: ClassVar[float] = 1.0
    #: How many coverage probes one coverage example may carry (see combine()).
    coverage_batch: ClassVar[int] = 1
    #: Registered only while the harness runs an authorization server (`--auth`).
    needs_auth: ClassVar[bool] = False

    def __repr__(self) -> str:  # appears in Hypothesis' "Draw 1 (case): ..." lines: no memory address
        return f"{type(self).__name__}()"

    @abstractmethod
    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        """The cases this property draws for `ctx`."""

    def coverage(self, ctx: Context) -> list[Probe]:
        """The named probes to send once each, in a fixed order, before exploring at random."""
        return []

    def combine(self, probes: list[Probe]) -> Case:
        """One case sending several probes (only called when coverage_batch > 1); a failing one is
        played again probe by probe, so each probe still gets its own verdict."""
        raise NotImplementedError

    def check(self, run: Run, ctx: Context) -> list[Violation]:
        """Relational judgements over the whole run; the oracle's per-frame rules come on top."""
        return []

    def applicable(self, ctx: Context) -> str | None:
        """None when the property can run on `ctx`; otherwise why not (shown as a skip)."""
        if ctx.era not in self.eras:
            return f"judged only by {', '.join(sorted(self.eras))}-era rules"
        return None


PROPERTY_MODULES: tuple[str, ...] = (
    "mcp_tempest.fuzz.properties.framing",
    "mcp_tempest.fuzz.properties.ids",
    "mcp_tempest.fuzz.properties.valid",
    "mcp_tempest.fuzz.properties.history",
    "mcp_tempest.fuzz.properties.lists",
    "mcp_tempest.fuzz.properties.handoff",
    "mcp_tempest.fuzz.properties.mrtr",
    "mcp_tempest.fuzz.properties.auth",
)


def all_properties() -> dict[str, Property]:
    """Every property by name, in campaign order. A property that needs the harness's
    authorization server (`needs_auth`) is there only while one runs (`--auth`), so a run
    without it has exactly the properties, jobs and reports it had before."""
    from mcp_tempest.targets.auth_client import active_issuer

    found: dict[str, Property] = {}
    for module_name in PROPERTY_MODULES:
        module = importlib.import_module(module_name)
        prop = module.PROPERTY
        if prop.needs_auth and active_issuer() is None:
            continue
        found[prop.name] = prop
    return found


def expectations_of(run: Run) -> dict[int, Expectation]:
    """The oracle's expectations, keyed by the send events the steps became."""
    out: dict[int, Expectation] = {}
    for k, step in enumerate(run.case.steps):
        if step.expect is None or k not in run.sends:
            continue
        out[run.sends[k]] = step.expect
    return out


def violation_json(v: Violation) -> dict[str, Any]:
    out = v.to_json()
    out["event"] = v.event_index
    return out


def params_get(case: Case, name: str, default: Any = None) -> Any:
    value: Mapping[str, Any] = case.params
    return value.get(name, default)
