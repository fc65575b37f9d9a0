"""What a server costs the model before it is used: its catalogue, measured, and read for drift.

A host puts every tool definition, resource, template and prompt definition and the server's
`instructions` into the model's prompt on every turn, whether any of it is used or not. This
module reads that catalogue through the era probe (all `nextCursor` pages, either era), counts it
in o200k_base tokens and UTF-8 bytes, and compares the reads of one catalogue: twice on one
process and once on a fresh one. A definition that changes between reads breaks the rule that
list results never depend on history or on the connection (DIGEST §15.7; per list TOOL-02,
RES-01, PR-01), and is how tool poisoning hides after a user approved a tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from mcp_tempest.fuzz.findings import Evidence
from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.token_count import ENCODING, count_tokens, definition_text
from mcp_tempest.targets.probe import CATALOGUE_LISTS, ProbeResult, probe
from mcp_tempest.targets.target_spec import TargetSpec
from mcp_tempest.targets.transcript import Transcript

PROPERTY: Final = "catalogue"
# How one item of each list is told apart from the others.
ITEM_KEY: Final = {"tools": "name", "prompts": "name", "resources": "uri", "resourceTemplates": "uriTemplate"}
METHOD: Final = {name: method for name, method, _ in CATALOGUE_LISTS}
TOOL_FIELDS: Final = ("name", "description", "inputSchema")


@dataclass(slots=True)
class Cost:
    """One definition's price in the prompt."""

    kind: str  # tools, resources, resourceTemplates, prompts, instructions
    name: str
    tokens: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "tokens": self.tokens, "bytes": self.bytes}


def tool_definition(tool: dict[str, Any]) -> dict[str, Any]:
    """The part of a tool the cost is counted on: name, description, inputSchema, in that order."""
    return {k: tool[k] for k in TOOL_FIELDS if k in tool}


def _definition(kind: str, item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    if kind == "tools":
        return tool_definition(item)
    return {k: v for k, v in item.items() if k != "_meta"}


def item_name(kind: str, item: Any) -> str:
    if isinstance(item, dict):
        value = item.get(ITEM_KEY[kind])
        if isinstance(value, str):
            return value
    return "(unnamed)"


def measure_item(kind: str, item: Any) -> Cost:
    text = definition_text(_definition(kind, item))
    return Cost(kind, item_name(kind, item), count_tokens(text), len(text.encode("utf-8")))


@dataclass(slots=True)
class Catalogue:
    """The measured catalogue of one server, as one read saw it."""

    target: str
    era: str
    version: str | None
    legacy: bool  # read the 2025-11-25 way (initialize handshake first)
    items: dict[str, list[Any]]
    instructions: str | None
    truncated: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # lists offered but not read
    costs: dict[str, list[Cost]] = field(default_factory=dict)

    @classmethod
    def from_probe(cls, result: ProbeResult, read: int = 0) -> Catalogue:
        listing = result.listings[read] if len(result.listings) > read else {}
        offered = [name for name, _, _ in CATALOGUE_LISTS if name in result.counts]
        cat = cls(
            target=result.target, era=result.era, version=result.version, legacy=result.era == "legacy",
            items={name: list(listing.get(name, [])) for name, _, _ in CATALOGUE_LISTS},
            instructions=result.instructions, truncated=list(result.truncated),
            failed=[n for n in offered if result.counts.get(n) is None and n not in listing
                    and not _unadvertised(result, n)],
        )
        cat.costs = {kind: sorted((measure_item(kind, it) for it in items), key=lambda c: (-c.tokens, c.name))
                     for kind, items in cat.items.items()}
        return cat

    @property
    def instructions_cost(self) -> Cost:
        text = self.instructions or ""
        return Cost("instructions", "instructions", count_tokens(text), len(text.encode("utf-8")))

    def tokens(self, kind: str) -> int:
        return sum(c.tokens for c in self.costs.get(kind, []))

    def bytes(self, kind: str) -> int:
        return sum(c.bytes for c in self.costs.get(kind, []))

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens(k) for k in self.costs) + self.instructions_cost.tokens

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes(k) for k in self.costs) + self.instructions_cost.bytes

    def everything(self) -> list[Cost]:
        """Every costed part, costliest first: what a server author cutting the catalogue reads."""
        parts = [c for costs in self.costs.values() for c in costs]
        if self.instructions:
            parts.append(self.instructions_cost)
        return sorted(parts, key=lambda c: (-c.tokens, c.kind, c.name))

    @property
    def era_label(self) -> str:
        if self.legacy:
            return f"legacy {self.version} (initialize handshake, then the lists)"
        return f"{self.era} {self.version or ''}".strip()

    def to_json(self) -> dict[str, Any]:
        tools = self.costs.get("tools", [])
        ins = self.instructions_cost
        out: dict[str, Any] = {
            "target": self.target,
            "encoding": ENCODING,
            "era": self.era,
            "version": self.version,
            "legacy": self.legacy,
            "tools": [{"name": c.name, "tokens": c.tokens, "bytes": c.bytes} for c in tools],
            "tools_tokens": self.tokens("tools"),
            "tools_bytes": self.bytes("tools"),
            "cheapest_tool": _brief(tools[-1]) if tools else None,
            "costliest_tool": _brief(tools[0]) if tools else None,
            "instructions_tokens": ins.tokens,
            "instructions_bytes": ins.bytes,
        }
        for kind, label in (("resources", "resources"), ("resourceTemplates", "resource_templates"),
                            ("prompts", "prompts")):
            costs = self.costs.get(kind, [])
            out[label] = [{"name": c.name, "tokens": c.tokens, "bytes": c.bytes} for c in costs]
            out[f"{label}_tokens"] = self.tokens(kind)
            out[f"{label}_bytes"] = self.bytes(kind)
        out.update({"total_tokens": self.total_tokens, "total_bytes": self.total_bytes,
                    "truncated": self.truncated, "failed": self.failed})
        return out

    def table(self, limit: int | None = None) -> list[str]:
        """The human view: every part sorted by cost, then the totals."""
        parts = self.everything()
        shown = parts if limit is None else parts[:limit]
        width = max([len(_label(c)) for c in shown] + [20])
        lines = [f"{'definition':<{width}}  {'tokens':>7}  {'bytes':>7}"]
        lines += [f"{_label(c):<{width}}  {c.tokens:>7}  {c.bytes:>7}" for c in shown]
        if len(shown) < len(parts):
            lines.append(f"... {len(parts) - len(shown)} more")
        tools = self.costs.get("tools", [])
        lines.append(f"tools: {len(tools)} definitions, {self.tokens('tools')} tokens"
                     + (f" (cheapest {tools[-1].name} {tools[-1].tokens}, costliest {tools[0].name} "
                        f"{tools[0].tokens})" if tools else ""))
        lines.append(f"instructions: {self.instructions_cost.tokens} tokens")
        for kind in ("resources", "resourceTemplates", "prompts"):
            if self.costs.get(kind):
                lines.append(f"{kind}: {len(self.costs[kind])} definitions, {self.tokens(kind)} tokens")
        return lines + self.notes()

    def notes(self) -> list[str]:
        """What makes the counts incomplete."""
        return ([f"note: {name} cut at the page limit; the counts are a lower bound" for name in self.truncated]
                + [f"note: {name} offered but could not be read" for name in self.failed])

    def summary_line(self) -> str:
        return (f"catalogue: {self.total_tokens} tokens ({ENCODING}), {self.total_bytes} bytes, "
                f"{len(self.costs.get('tools', []))} tools, {self.era_label}")


def _unadvertised(result: ProbeResult, name: str) -> bool:
    caps = result.capabilities
    return caps is not None and ("resources" if name == "resourceTemplates" else name) not in caps


def _brief(c: Cost) -> dict[str, Any]:
    return {"name": c.name, "tokens": c.tokens}


def _label(c: Cost) -> str:
    return "instructions" if c.kind == "instructions" else f"{_SINGULAR[c.kind]} {c.name}"


_SINGULAR: Final = {"tools": "tool", "resources": "resource", "resourceTemplates": "template", "prompts": "prompt"}


# --- the section of every fuzz report ---

REPORT_ROWS: Final = 10  # the costliest parts a report shows; the rest are in findings.json


def report_markdown(cats: list[Catalogue]) -> list[str]:
    """summary.md's catalogue section: per target its totals and its costliest parts."""
    lines: list[str] = []
    for cat in cats:
        lines += [f"### Catalogue of `{_md(cat.target)}`", "", _md(cat.summary_line()) + ".", "",
                  "| definition | tokens | bytes |", "| --- | ---: | ---: |"]
        parts = cat.everything()
        lines += [f"| {_md(_label(c))} | {c.tokens} | {c.bytes} |" for c in parts[:REPORT_ROWS]]
        if len(parts) > REPORT_ROWS:
            lines.append(f"| ... {len(parts) - REPORT_ROWS} more | | |")
        lines += ["", *(f"> {_md(note)}" for note in cat.notes()), ""]
    return lines


def report_html(cats: list[Catalogue]) -> list[str]:
    """report.html's catalogue section, every part sorted by cost."""
    import html

    e = html.escape
    out: list[str] = []
    for cat in cats:
        out.append(f"<h2>Catalogue of <code>{e(cat.target)}</code></h2><p>{e(cat.summary_line())}: what the "
                   "host puts into the model's prompt on every turn, before any of it is used.</p>")
        out.append("<table><tr><th>definition</th><th>tokens</th><th>bytes</th></tr>")
        out += [f"<tr><td>{e(_label(c))}</td><td>{c.tokens}</td><td>{c.bytes}</td></tr>" for c in cat.everything()]
        out.append("</table>")
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --- the budget gate ---


def over_budget(cat: Catalogue, max_tokens: int | None, max_tool_tokens: int | None) -> str:
    """One line naming what is over the budget and the costliest parts; empty when within it."""
    reasons: list[str] = []
    if max_tokens is not None and cat.total_tokens > max_tokens:
        reasons.append(f"total {cat.total_tokens} tokens > --max-tokens {max_tokens}")
    if max_tool_tokens is not None:
        over = [c for c in cat.costs.get("tools", []) if c.tokens > max_tool_tokens]
        if over:
            names = ", ".join(f"{c.name} {c.tokens}" for c in over[:3]) + (" ..." if len(over) > 3 else "")
            reasons.append(f"{len(over)} tool(s) over --max-tool-tokens {max_tool_tokens}: {names}")
    if not reasons:
        return ""
    costliest = ", ".join(f"{_label(c)} {c.tokens}" for c in cat.everything()[:3])
    return f"catalogue: over budget: {'; '.join(reasons)} (costliest: {costliest})"


# --- reading, and drift ---


@dataclass(slots=True)
class Reading:
    """The catalogue read three times: twice on one process, once on a fresh one."""

    first: ProbeResult
    fresh: ProbeResult | None
    transcript: Transcript
    fresh_note: str  # what "fresh" was for this target: a process or a connection


def read(spec: TargetSpec, *, timeout: float, max_pages: int, drift: bool = True) -> Reading:
    """Raises targets.probe.ProbeFailure with one line when the target is unusable."""
    transcript = spec.new_transcript()
    first = probe(spec, timeout=timeout, max_pages=max_pages, check_dual=False, transcript=transcript,
                  lists=CATALOGUE_LISTS, reads=2 if drift else 1)
    fresh = None
    if drift:
        fresh = probe(spec, timeout=timeout, max_pages=max_pages, check_dual=False, transcript=transcript,
                      lists=CATALOGUE_LISTS, reads=1)
    note = "two fresh processes" if spec.transport == "stdio" or spec.text.startswith("http+spawn:") \
        else "two connections"
    return Reading(first, fresh, transcript, note)


def diff_listings(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> list[tuple[str, str, str]]:
    """(list, item, what changed) for every definition that differs between two reads."""
    out: list[tuple[str, str, str]] = []
    for kind in ITEM_KEY:
        if kind not in a or kind not in b:
            continue
        left = {item_name(kind, it): it for it in a[kind]}
        right = {item_name(kind, it): it for it in b[kind]}
        for name in sorted(left.keys() - right.keys()):
            out.append((kind, name, "disappeared"))
        for name in sorted(right.keys() - left.keys()):
            out.append((kind, name, "appeared"))
        for name in sorted(left.keys() & right.keys()):
            x, y = left[name], right[name]
            if not (isinstance(x, dict) and isinstance(y, dict)):
                if x != y:
                    out.append((kind, name, "definition"))
                continue
            changed = sorted(k for k in (x.keys() | y.keys()) if k != "_meta" and x.get(k) != y.get(k))
            if changed:
                out.append((kind, name, ", ".join(changed)))
    return out


def drift_evidence(reading: Reading) -> list[Evidence]:
    """Each definition that changed between reads, as a finding of the list's own rule."""
    first = reading.first
    pairs: list[tuple[str, dict[str, list[Any]], dict[str, list[Any]]]] = []
    if len(first.listings) >= 2:
        pairs.append(("two reads on one process", first.listings[0], first.listings[1]))
    if reading.fresh is not None and first.listings and reading.fresh.listings:
        pairs.append((reading.fresh_note, first.listings[0], reading.fresh.listings[0]))
    found: list[Evidence] = []
    seen: set[tuple[str, str, str, str]] = set()
    for where, a, b in pairs:
        for kind, name, what in diff_listings(a, b):
            if (kind, name, what, where) in seen:
                continue
            seen.add((kind, name, what, where))
            from mcp_tempest.fuzz.properties.lists import (
                LISTS,  # the list rules, imported only when one broke
            )

            method = METHOD[kind]
            rule = LISTS[method][2]
            title = (f"catalogue drift: {method} {_SINGULAR[kind]} `{name}` "
                     + (f"{what} between {where}" if what in ("appeared", "disappeared")
                        else f"changed ({what}) between {where}"))
            detail = _drift_detail(kind, name, a, b)
            v = Violation(rule, "MUST", title, detail, method)
            found.append(_evidence(reading, v, {"kind": kind, "item": name, "changed": what, "between": where}))
    return found


def _drift_detail(kind: str, name: str, a: dict[str, list[Any]], b: dict[str, list[Any]]) -> str:
    def find(listing: dict[str, list[Any]]) -> Any:
        return next((it for it in listing.get(kind, []) if item_name(kind, it) == name), None)

    before, after = find(a), find(b)
    if isinstance(before, dict) and isinstance(after, dict):  # only what changed, the rest is noise
        keys = sorted(k for k in (before.keys() | after.keys()) if k != "_meta" and before.get(k) != after.get(k))
        before, after = ({k: d[k] for k in keys if k in d} for d in (before, after))
    return (f"list results must not depend on history or the connection (DIGEST §15.7): first read "
            f"{_short(before)}, then {_short(after)}")


def _short(item: Any, limit: int = 300) -> str:
    if item is None:
        return "absent"
    text = definition_text(item)
    return text if len(text) <= limit else text[:limit] + "..."


def _evidence(reading: Reading, v: Violation, case: dict[str, Any]) -> Evidence:
    spec_target = reading.first.target
    return Evidence(
        rule=v.rule, strength=v.strength, title=v.title, method=v.method, transport=reading.first.transport,
        mutation=None, property=PROPERTY, case={"property": PROPERTY, **case},
        transcript=reading.transcript.to_json(), violations=[v.to_json()], target=spec_target, confirmed=True,
        note="found by reading the catalogue (mcp-tempest catalogue); run that command again to reproduce",
    )


def text_evidence(reading: Reading, violations: list[Violation]) -> list[Evidence]:
    return [_evidence(reading, v, {"flag": v.rule}) for v in violations]
