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

import json
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field, replace
from typing import Any, Final

import orjson

from mcp_tempest.fuzz.findings import Evidence
from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.safe_text import NAME_WIDTH, html_text, markdown_cell, markdown_code, visible
from mcp_tempest.fuzz.terminal_style import COLUMNS, cell, columns
from mcp_tempest.fuzz.token_count import ENCODING, count_tokens, definition_text
from mcp_tempest.strategies.json_bounds import MAX_WRITTEN_DEPTH, json_text, nesting_depth, same_json
from mcp_tempest.targets.heap import return_big_blocks
from mcp_tempest.targets.list_reader import ListBudget, ListRead, SharedItems
from mcp_tempest.targets.probe import CATALOGUE_LISTS, ProbeResult, probe
from mcp_tempest.targets.target_spec import TargetSpec
from mcp_tempest.targets.transcript import Transcript

PROPERTY: Final = "catalogue"
# How one item of each list is told apart from the others.
ITEM_KEY: Final = {"tools": "name", "prompts": "name", "resources": "uri", "resourceTemplates": "uriTemplate"}
METHOD: Final = {name: method for name, method, _ in CATALOGUE_LISTS}
TOOL_FIELDS: Final = ("name", "description", "inputSchema")
# The lists a host reads when asked for, not on every turn: outside the headline figure.
ON_DEMAND: Final = ("resources", "resourceTemplates", "prompts")


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


def _definition_json(kind: str, item: Any) -> str:
    """One definition's text, whatever its depth: a schema nested past the standard encoder's
    recursion (an inputSchema 500 deep) is written by `json_text`, the same text without
    recursion, so its count is its true cost, not a cut one."""
    definition = _definition(kind, item)
    if nesting_depth(definition, stop=MAX_WRITTEN_DEPTH) >= MAX_WRITTEN_DEPTH:
        return json_text(definition)
    return definition_text(definition)


def _own(text: str) -> str:
    """`text` copied into a string of its own. A name kept from a parsed page (a Cost each, 100,000
    of them) would otherwise keep, long after the page is let go, the allocator's memory the page
    was parsed into: measured, about 50 MB of a 100,000-tool list stayed resident for 5 MB of names."""
    return text[:1] + text[1:] if len(text) > 1 else text


def _cost(kind: str, item: Any, text: str) -> Cost:
    return Cost(kind, _own(item_name(kind, item)), count_tokens(text), len(text.encode("utf-8")))


def measure_item(kind: str, item: Any) -> Cost:
    """What one definition costs on its own: the table's rows, and what --max-tool-tokens gates."""
    return _cost(kind, item, _definition_json(kind, item))


def measure_list(kind: str, items: list[Any]) -> Cost:
    """What a whole list costs as the host sends it, one JSON array: tokens merge across the joins,
    so this is not the sum of the items' own counts (server-everything's 13 tools: 1,307 as one
    list, 1,305 summed)."""
    count = ListCount()
    for item in items:
        count.add(_definition_json(kind, item))
    return count.cost(kind)


#: Characters of a list's JSON counted in one go. Up to this, a list is counted exactly as one
#: string; a longer one (100,000 tools) in pieces of about this size, cut between items, so the
#: tokenizer never holds the ids of a whole 10 MB list (3 million ints, over 100 MB): a piece's
#: edges may merge a token or two differently than the whole would, a few tokens in millions.
LIST_CHUNK_CHARS = 1 << 20


class ListCount:
    """A list's JSON text `[a, b, ...]` counted as its items' texts come, in pieces of about
    LIST_CHUNK_CHARS cut between items: the same pieces whether the list is held whole
    (`measure_list`) or read a page at a time and let go (`Meter`), so the same count."""

    __slots__ = ("_count", "_length", "_piece", "items", "size", "tokens")

    def __init__(self, count: Callable[[str], int] = count_tokens) -> None:
        self._count = count  # the tokens of one piece
        self.items = 0
        self.size = 0  # UTF-8 bytes of the items' texts
        self.tokens = 0  # of the pieces counted so far
        self._piece: list[str] = []
        self._length = 0

    def add(self, text: str) -> None:
        if self._piece and self._length + len(text) > LIST_CHUNK_CHARS:
            self.tokens += self._count("".join(self._piece))
            self._piece, self._length = [], 0
        self._piece.append(("[" if self.items == 0 else ", ") + text)
        self._length += len(self._piece[-1])
        self.size += len(text.encode("utf-8"))
        self.items += 1

    def cost(self, kind: str) -> Cost:
        last = self._count("".join([*self._piece, "]" if self.items else "[]"]))
        return Cost(kind, f"{kind} (one list)", self.tokens + last, self.size + 2 * max(self.items - 1, 0) + 2)


class Definitions:
    """The definitions as the server sent them, as the JSON `orjson.dumps` writes of
    `{list: [items], ..., "instructions": text}`: `definitions` in `catalogue --json` and
    findings.json, what a later `--compare` reads. Encoded a page at a time as pages come, so a
    list is never held parsed to be written; a page orjson cannot write (a lone surrogate, an
    integer past 64 bits) is written by the standard encoder, ASCII."""

    __slots__ = ("_pages",)

    def __init__(self, kinds: list[str]) -> None:
        self._pages: dict[str, list[bytes]] = {kind: [] for kind in kinds}

    def add(self, kind: str, items: list[Any]) -> None:
        if items:
            self._pages.setdefault(kind, []).append(_encoded(items))

    def encoded(self, instructions: str | None) -> bytes:
        """The whole document (once: the pages are let go)."""
        parts: list[Any] = [b"{"]
        for kind, pages in self._pages.items():
            parts += [orjson.dumps(kind), b":["]
            for k, page in enumerate(pages):
                parts += [b"," if k else b"", memoryview(page)[1:-1]]  # each page without its brackets
            parts.append(b"],")
        self._pages.clear()
        parts += [b'"instructions":', _encoded(instructions), b"}"]
        return b"".join(parts)


def _encoded(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate or an integer past 64 bits
        return json.dumps(value, default=repr).encode("ascii")


def definitions_fragment(items: dict[str, list[Any]], instructions: str | None) -> orjson.Fragment:
    """`Definitions` of lists held whole (`definitions` of a catalogue read by `catalogue`), written
    as they are wherever they are put."""
    out = Definitions(list(items))
    for kind, listed in items.items():
        out.add(kind, listed)
    return orjson.Fragment(out.encoded(instructions))


class Meter:
    """A catalogue measured a page at a time, as the era probe reads it (`probe(take=meter.take)`),
    no item kept: each definition's cost, the tool definitions as one list and, when asked for,
    the definitions' JSON. `Catalogue.from_probe` measures lists held whole with one, so both
    ways count alike. Why: `fuzz` measured its target's catalogue from the whole list held parsed
    (100,000 tools, about 60 MB) with every definition written twice, once per figure."""

    __slots__ = ("costs", "definitions", "tools_list")

    def __init__(self, *, definitions: bool = True) -> None:
        self.costs: dict[str, list[Cost]] = {name: [] for name, _, _ in CATALOGUE_LISTS}
        self.tools_list = ListCount()
        self.definitions = Definitions(list(self.costs)) if definitions else None

    def take(self, kind: str, items: list[Any]) -> None:
        costs = self.costs.setdefault(kind, [])
        for item in items:
            text = _definition_json(kind, item)
            costs.append(_cost(kind, item, text))
            if kind == "tools":
                self.tools_list.add(text)
        if self.definitions is not None:
            self.definitions.add(kind, items)

    def saved_definitions(self, instructions: str | None) -> bytes:
        """The definitions' JSON, once every page is taken (a Meter made with `definitions`)."""
        if self.definitions is None:
            raise ValueError("this meter was made without definitions")
        return self.definitions.encoded(instructions)

    def catalogue(self, result: ProbeResult, read: int = 0, items: dict[str, list[Any]] | None = None) -> Catalogue:
        """The catalogue of `result`'s `read`-th pass, as measured here (`items`: the lists, when held)."""
        listing = result.list_reads[read] if len(result.list_reads) > read else {}
        cat = Catalogue(
            target=result.target, era=result.era, version=result.version, legacy=result.era == "legacy",
            items=items if items is not None else {name: [] for name, _, _ in CATALOGUE_LISTS},
            instructions=result.instructions,
            truncated=[n for n, r in listing.items() if r.cut],
            failed=[n for n, r in listing.items() if r.failed],
            reads=dict(listing), measured=self.tools_list.cost("tools"),
        )
        cat.costs = {kind: sorted(costs, key=lambda c: (-c.tokens, c.name)) for kind, costs in self.costs.items()}
        return cat


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
    # How each list's read ended (targets/list_reader.py): complete, cut short (why, how far) or unreadable.
    reads: dict[str, ListRead] = field(default_factory=dict)
    # The tool definitions as one list, measured as the catalogue is made: callers let the items go
    # once measured (150,000 tools), and a saved catalogue (`--compare OLD`) is made from its items too;
    # one measured page by page (`Meter`) is given (`measured`).
    tools_list_cost: Cost = field(init=False, repr=False, compare=False)
    measured: InitVar[Cost | None] = None

    def __post_init__(self, measured: Cost | None) -> None:
        self.tools_list_cost = measured if measured is not None else measure_list("tools", self.items.get("tools", []))

    @classmethod
    def from_probe(cls, result: ProbeResult, read: int = 0) -> Catalogue:
        """The catalogue of a probe that kept its lists (`catalogue`, `replay`): measured as `fuzz`'s
        page by page (`Meter`), the items kept for drift and the text flags."""
        listing = result.list_reads[read] if len(result.list_reads) > read else {}
        meter = Meter(definitions=False)
        items = {name: list(listing[name].items) if name in listing else [] for name, _, _ in CATALOGUE_LISTS}
        for name, listed in items.items():
            meter.take(name, listed)
        return meter.catalogue(result, read, items)

    @property
    def instructions_cost(self) -> Cost:
        text = self.instructions or ""
        return Cost("instructions", "instructions", count_tokens(text), len(text.encode("utf-8")))

    @property
    def turn_tokens(self) -> int:
        """The headline and what --max-tokens gates: what the model pays on every turn, the tool
        definitions as one list plus the instructions. Resources, templates and prompts are not
        put in the context every turn, so they are their own figure (`on_demand_tokens`)."""
        return self.tools_list_cost.tokens + self.instructions_cost.tokens

    @property
    def turn_bytes(self) -> int:
        return self.tools_list_cost.bytes + self.instructions_cost.bytes

    @property
    def on_demand_tokens(self) -> int:
        """Resources, templates and prompts, each counted on its own: read when asked for."""
        return sum(self.tokens(k) for k in ON_DEMAND)

    @property
    def on_demand_bytes(self) -> int:
        return sum(self.bytes(k) for k in ON_DEMAND)

    def tokens(self, kind: str) -> int:
        return sum(c.tokens for c in self.costs.get(kind, []))

    def bytes(self, kind: str) -> int:
        return sum(c.bytes for c in self.costs.get(kind, []))

    @property
    def total_tokens(self) -> int:
        """Every definition counted on its own plus the instructions: kept for saved catalogues and
        `--compare` growth; not the headline (`turn_tokens`)."""
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
            return f"legacy {visible(self.version, NAME_WIDTH)} (initialize handshake, then the lists)"
        return f"{self.era} {visible(self.version or '', NAME_WIDTH)}".strip()

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
            "tools_list_tokens": self.tools_list_cost.tokens,
            "tools_list_bytes": self.tools_list_cost.bytes,
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
        out.update({"turn_tokens": self.turn_tokens, "turn_bytes": self.turn_bytes,
                    "on_demand_tokens": self.on_demand_tokens, "on_demand_bytes": self.on_demand_bytes,
                    "total_tokens": self.total_tokens, "total_bytes": self.total_bytes,
                    "truncated": self.truncated, "failed": self.failed, "complete": self.complete,
                    "lists": {name: {**r.to_json(), "note": r.describe()} for name, r in self.reads.items()}})
        return out

    def table(self, limit: int | None = None) -> list[str]:
        """The human view: every part sorted by cost, then the totals."""
        return list(self.table_lines(limit))

    def table_lines(self, limit: int | None = None) -> Iterator[str]:
        """`table`, a line at a time: a catalogue of 150,000 tools is printed, not held twice."""
        parts = self.everything()
        shown = parts if limit is None else parts[:limit]
        # the label column: as wide as the widest label, within COLUMNS (a wide character is two)
        room = COLUMNS - len(f"  {0:>7}  {0:>7}")
        width = min(max([columns(visible(_label(c), NAME_WIDTH)) for c in shown] + [20]), room)
        yield f"{'definition':<{width}}  {'tokens':>7}  {'bytes':>7}"
        for c in shown:
            yield f"{cell(visible(_label(c), NAME_WIDTH), width)}  {c.tokens:>7}  {c.bytes:>7}"
        if len(shown) < len(parts):
            yield f"... {len(parts) - len(shown)} more"
        yield from self._totals()

    def _totals(self) -> list[str]:
        tools = self.costs.get("tools", [])
        lines = [f"every turn: {self.turn_tokens} tokens, {self.turn_bytes} bytes (tool definitions as one list "
                 f"{self.tools_list_cost.tokens} + instructions {self.instructions_cost.tokens})",
                 f"tools: {len(tools)} definitions, {self.tools_list_cost.tokens} tokens as one list, "
                 f"{self.tokens('tools')} summed per tool"
                 + (f" (cheapest {visible(tools[-1].name, NAME_WIDTH)} {tools[-1].tokens}, "
                    f"costliest {visible(tools[0].name, NAME_WIDTH)} {tools[0].tokens})" if tools else "")]
        listed = [f"{_PLURAL[kind]} {self.tokens(kind)} ({len(self.costs[kind])})"
                  for kind in ON_DEMAND if self.costs.get(kind)]
        if listed:
            lines.append(f"resources, templates, prompts (not sent every turn): {self.on_demand_tokens} tokens "
                         f"({', '.join(listed)})")
        return lines + self.notes()

    def notes(self) -> list[str]:
        """What makes the counts incomplete: each list cut short (why, how far) or unreadable."""
        return [f"note: {visible(self.reads[name].describe())}" if name in self.reads
                else f"note: {name} incomplete" for name in [*self.truncated, *self.failed]]

    @property
    def complete(self) -> bool:
        """Every offered list was read to its last page: the totals are the catalogue's, not a lower bound."""
        return not self.truncated and not self.failed

    def summary_line(self) -> str:
        # An incomplete catalogue's totals are lower bounds; an unreadable tools/list is not "0 tools".
        least = "" if self.complete else "at least "
        n_tools = len(self.costs.get("tools", []))
        tools = ("tools unreadable" if "tools" in self.failed
                 else f"{n_tools}+ tools (cut short)" if "tools" in self.truncated else f"{n_tools} tools")
        demand = f", + {least}{self.on_demand_tokens} in resources, templates, prompts" if self.on_demand_tokens else ""
        return (f"catalogue: {least}{self.turn_tokens} tokens every turn ({ENCODING}; tools as one list + "
                f"instructions), {least}{self.turn_bytes} bytes{demand}, "
                f"{tools}, {self.era_label}" + ("" if self.complete else ", INCOMPLETE"))


def _brief(c: Cost) -> dict[str, Any]:
    return {"name": c.name, "tokens": c.tokens}


def _label(c: Cost) -> str:
    return "instructions" if c.kind == "instructions" else f"{_SINGULAR[c.kind]} {c.name}"


_SINGULAR: Final = {"tools": "tool", "resources": "resource", "resourceTemplates": "template", "prompts": "prompt"}
_PLURAL: Final = {"resources": "resources", "resourceTemplates": "templates", "prompts": "prompts"}


# --- the section of every fuzz report ---

REPORT_ROWS: Final = 10  # the costliest parts a report shows; the rest are in findings.json
HTML_ROWS: Final = 500  # report.html's table: whole for any usual server, never 150,000 rows


def report_markdown(cats: list[Catalogue]) -> list[str]:
    """summary.md's catalogue section: per target its totals and its costliest parts."""
    lines: list[str] = []
    for cat in cats:
        lines += [f"### Catalogue of {markdown_code(cat.target)}", "", markdown_cell(cat.summary_line()) + ".", "",
                  "| definition | tokens | bytes |", "| --- | ---: | ---: |"]
        parts = cat.everything()
        lines += [f"| {markdown_cell(_label(c), NAME_WIDTH)} | {c.tokens} | {c.bytes} |" for c in parts[:REPORT_ROWS]]
        if len(parts) > REPORT_ROWS:
            lines.append(f"| ... {len(parts) - REPORT_ROWS} more | | |")
        lines += ["", *(f"> {markdown_cell(note)}" for note in cat.notes()), ""]
    return lines


def report_html(cats: list[Catalogue]) -> list[str]:
    """report.html's catalogue section, every part sorted by cost."""
    e = html_text
    out: list[str] = []
    for cat in cats:
        out.append(f"<h2>Catalogue of <code>{e(cat.target)}</code></h2><p>{e(cat.summary_line())}: what the "
                   "host puts into the model's prompt on every turn, before any of it is used.</p>")
        out.append("<table><tr><th>definition</th><th>tokens</th><th>bytes</th></tr>")
        parts = cat.everything()
        out += [f"<tr><td>{e(_label(c), NAME_WIDTH)}</td><td>{c.tokens}</td><td>{c.bytes}</td></tr>"
                for c in parts[:HTML_ROWS]]
        if len(parts) > HTML_ROWS:
            out.append(f"<tr><td colspan=\"3\">... {len(parts) - HTML_ROWS} more (every one is in findings.json)"
                       "</td></tr>")
        out.append("</table>")
    return out


# --- the budget gate ---


def over_budget(cat: Catalogue, max_tokens: int | None, max_tool_tokens: int | None) -> str:
    """One line naming what is over the budget and the costliest parts; empty when within it."""
    reasons: list[str] = []
    if max_tokens is not None and cat.turn_tokens > max_tokens:
        reasons.append(f"every turn (tool definitions as one list + instructions) {cat.turn_tokens} tokens "
                       f"> --max-tokens {max_tokens}")
    if max_tool_tokens is not None:
        over = [c for c in cat.costs.get("tools", []) if c.tokens > max_tool_tokens]
        if over:
            names = (", ".join(f"{visible(c.name, NAME_WIDTH)} {c.tokens}" for c in over[:3])
                     + (" ..." if len(over) > 3 else ""))
            reasons.append(f"{len(over)} tool(s) over --max-tool-tokens {max_tool_tokens}: {names}")
    gated = max_tokens is not None or max_tool_tokens is not None
    gaps = "; ".join(visible(cat.reads[n].describe()) for n in [*cat.truncated, *cat.failed] if n in cat.reads)
    if not reasons:
        if gated and not cat.complete:
            # A list cut short or unreadable counts what was read, not the catalogue: "0 tokens"
            # from a tools/list over the frame cap must not pass a gate.
            return (f"catalogue: the budget cannot be checked: the catalogue is incomplete ({gaps}); "
                    f"{cat.turn_tokens} tokens every turn is a lower bound")
        return ""
    costliest = ", ".join(f"{visible(_label(c), NAME_WIDTH)} {c.tokens}" for c in cat.everything()[:3])
    lower = f" (and the catalogue is incomplete, so more: {gaps})" if not cat.complete else ""
    return f"catalogue: over budget: {'; '.join(reasons)} (costliest: {costliest}){lower}"


# --- reading, and drift ---


@dataclass(slots=True)
class Reading:
    """The catalogue read three times: twice on one process, once on a fresh one."""

    first: ProbeResult
    fresh: ProbeResult | None
    transcript: Transcript
    fresh_note: str  # what "fresh" was for this target: a process or a connection
    _transcript_doc: dict[str, Any] | None = None

    def drop_items(self) -> None:
        """Let every read's items go, once the catalogue is measured and its findings made: what
        the reports need is counted (costs, findings); the parsed lists and pages are not."""
        for result in (self.first, self.fresh):
            for reads in result.list_reads if result is not None else ():
                for r in reads.values():
                    r.drop_items()
        self.transcript.events.clear()  # the pages as received (a finding's repro has its own copy)

    def transcript_json(self) -> dict[str, Any]:
        """The transcript as findings store it, made once: every finding of one reading shares it
        (a copy each would hold the catalogue's pages once per finding)."""
        if self._transcript_doc is None:
            self._transcript_doc = self.transcript.to_json()
        return self._transcript_doc


def read(spec: TargetSpec, *, timeout: float, max_pages: int | None = None, budget: ListBudget | None = None,
         drift: bool = True) -> Reading:
    """Raises targets.probe.ProbeFailure with one line when the target is unusable. Each of the
    three passes over the lists is bounded by `budget` (the default budget when None; `max_pages`
    replaces its page limit)."""
    return_big_blocks()  # each pass frees its pages: back to the system, not kept in the heap
    budget = budget if budget is not None else ListBudget()
    # The three passes share their equal items (one parsed copy of an unchanged catalogue, not three).
    budget = replace(budget, pages=max_pages if max_pages is not None else budget.pages, shared=SharedItems())
    transcript = spec.new_transcript()
    first = probe(spec, timeout=timeout, budget=budget, check_dual=False, transcript=transcript,
                  lists=CATALOGUE_LISTS, reads=2 if drift else 1)
    fresh = None
    if drift:
        fresh = probe(spec, timeout=timeout, budget=budget, check_dual=False, transcript=transcript,
                      lists=CATALOGUE_LISTS, reads=1)
    note = "two fresh processes" if spec.transport == "stdio" or spec.text.startswith("http+spawn:") \
        else "two connections"
    return Reading(first, fresh, transcript, note)


def diff_listings(a: dict[str, list[Any]], b: dict[str, list[Any]],
                  partial: frozenset[str] = frozenset()) -> list[tuple[str, str, str]]:
    """(list, item, what changed) for every definition that differs between two reads. A list in
    `partial` was cut short in one read or both: only items both reads hold are compared (an item
    past one read's cut has not disappeared)."""
    out: list[tuple[str, str, str]] = []
    for kind in ITEM_KEY:
        if kind not in a or kind not in b:
            continue
        left = {item_name(kind, it): it for it in a[kind]}
        right = {item_name(kind, it): it for it in b[kind]}
        if kind not in partial:
            for name in sorted(left.keys() - right.keys()):
                out.append((kind, name, "disappeared"))
            for name in sorted(right.keys() - left.keys()):
                out.append((kind, name, "appeared"))
        for name in sorted(left.keys() & right.keys()):
            x, y = left[name], right[name]
            if not (isinstance(x, dict) and isinstance(y, dict)):
                if not same_json(x, y):
                    out.append((kind, name, "definition"))
                continue
            changed = sorted(k for k in (x.keys() | y.keys()) if k != "_meta" and not same_json(x.get(k), y.get(k)))
            if changed:
                out.append((kind, name, ", ".join(changed)))
    return out


def catalogue_evidence(reading: Reading, cat: Catalogue) -> list[Evidence]:
    """Every finding one reading of the catalogue makes: drift, a pagination loop, untrusted text.
    `mcp-tempest catalogue` records them and `replay` re-judges a catalogue finding with them."""
    from mcp_tempest.fuzz.text_flags import flag_catalogue

    return (drift_evidence(reading) + pagination_evidence(reading)
            + text_evidence(reading, flag_catalogue(cat.items, cat.instructions)))


def _readable(reads: dict[str, ListRead]) -> dict[str, list[Any]]:
    return {name: r.items for name, r in reads.items() if not r.failed}


def drift_evidence(reading: Reading) -> list[Evidence]:
    """Each definition that changed between reads, as a finding of the list's own rule."""
    first = reading.first
    pairs: list[tuple[str, dict[str, ListRead], dict[str, ListRead]]] = []
    if len(first.list_reads) >= 2:
        pairs.append(("two reads on one process", first.list_reads[0], first.list_reads[1]))
    if reading.fresh is not None and first.list_reads and reading.fresh.list_reads:
        pairs.append((reading.fresh_note, first.list_reads[0], reading.fresh.list_reads[0]))
    found: list[Evidence] = []
    seen: set[tuple[str, str, str, str]] = set()
    for where, reads_a, reads_b in pairs:
        a, b = _readable(reads_a), _readable(reads_b)
        partial = frozenset(n for n in a.keys() & b.keys() if not (reads_a[n].complete and reads_b[n].complete))
        for kind, name, what in diff_listings(a, b, partial):
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


def pagination_evidence(reading: Reading) -> list[Evidence]:
    """A list whose `nextCursor` came back to a cursor already followed: the list never ends, so
    no client can read it whole. DIGEST §9.5 (a missing nextCursor is the end; cursors stable) has
    no rule id of its own, so the finding is filed under the list's own rule, as drift is."""
    from mcp_tempest.fuzz.properties.lists import LISTS

    found: list[Evidence] = []
    seen: set[str] = set()
    probes = [reading.first] + ([reading.fresh] if reading.fresh is not None else [])
    for result in probes:
        for reads in result.list_reads:
            for kind, r in reads.items():
                if r.loop is None or kind in seen:
                    continue
                seen.add(kind)
                method = METHOD[kind]
                rule = LISTS[method][2]
                title = f"catalogue pagination loops: {method} nextCursor repeats a cursor already followed"
                detail = (f"page {r.loop} answered nextCursor {_short(r.loop_cursor, 80)}, a cursor an earlier page "
                          "had already given, so following nextCursor never reaches the end (DIGEST §9.5: a "
                          f"missing nextCursor is the end); the read stopped there ({r.pages} pages, "
                          f"{r.count} items)")
                v = Violation(rule, "MUST", title, detail, method)
                found.append(_evidence(reading, v, {"kind": kind, "loop_page": r.loop}))
    return found


def _evidence(reading: Reading, v: Violation, case: dict[str, Any]) -> Evidence:
    spec_target = reading.first.target
    return Evidence(
        rule=v.rule, strength=v.strength, title=v.title, method=v.method, transport=reading.first.transport,
        mutation=None, property=PROPERTY, case={"property": PROPERTY, **case},
        transcript=reading.transcript_json(), violations=[v.to_json()], target=spec_target, confirmed=True,
        note="found by reading the catalogue (mcp-tempest catalogue); `mcp-tempest replay` reads it again the same way",
    )


def text_evidence(reading: Reading, violations: list[Violation]) -> list[Evidence]:
    return [_evidence(reading, v, {"flag": v.rule}) for v in violations]
