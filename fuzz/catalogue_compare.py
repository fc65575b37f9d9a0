"""`catalogue --compare OLD`: what changed between two releases' catalogues, and whether it breaks.

A release that drops a tool, adds a required argument or narrows an enum breaks every host and
agent that called the old one; one that rewrites a description or flips an annotation runs
something other than what the user approved (the way tool poisoning hides). Neither shows up in a
diff of the server's source the way it shows up here: this compares the definitions the two
releases list, as the model sees them, and classifies each change:

- breaking: a tool, resource, template or prompt removed (or renamed); a required argument added
  or an argument made required; an argument's type, enum or limit narrowed; an output member
  removed or its type changed; any schema change this cannot prove harmless;
- compatible: an optional argument or an output member added; a limit or enum widened; an item
  added;
- description: a description, title, annotation or schema annotation (default, examples) changed.

The schema walk reads an input schema the way a caller is hit by it (fewer values accepted is
breaking) and an output schema the way a reader of the result is (a member gone or retyped, or
more values possible, is breaking). Both sides are `Catalogue`s: a live target is read like the
main one; a file saved by `catalogue --json` or `fuzz` carries the definitions it was measured on
(`definitions`), and its token costs are counted again here, with the same counter as the new side.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from mcp_tempest.fuzz.catalogue import (
    ITEM_KEY,
    Catalogue,
    definitions_fragment,
    diff_listings,
    item_name,
    measure_item,
    read,
)
from mcp_tempest.fuzz.safe_text import NAME_WIDTH, visible
from mcp_tempest.fuzz.terminal_style import COLUMNS, cell, columns
from mcp_tempest.strategies.json_bounds import MAX_SCHEMA_DEPTH, json_text, same_json
from mcp_tempest.targets import validate
from mcp_tempest.targets.list_reader import ListBudget
from mcp_tempest.targets.probe import ProbeFailure
from mcp_tempest.targets.target_spec import TargetError, parse_target

#: The three kinds of change, most serious first (the order the screen shows them in).
KINDS: Final = ("breaking", "description", "compatible")
DEFAULT_FAIL_ON_CHANGES: Final = ("breaking",)
TARGET_PREFIXES: Final = ("stdio:", "http://", "https://", "http+spawn:")
#: What one screen shows; `--json` and catalogue.json hold every change and every tool.
SHOWN_LINES: Final = 40  # lines of changes
INLINE: Final = 60  # a description change this short (before and after) fits on its change's line
SHOWN_TOOLS: Final = 20
EXCERPT: Final = 70  # characters of a changed description shown either side of the change
_SINGULAR: Final = {"tools": "tool", "resources": "resource", "resourceTemplates": "template",
                    "prompts": "prompt", "instructions": "instructions"}

# Schema keywords by what a change of them does to the values a schema accepts.
_LOWER: Final = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains")
_UPPER: Final = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains")
_RESTRICTING: Final = ("pattern", "format", "multipleOf", "const", "propertyNames", "dependentRequired",
                       "contentMediaType", "contentEncoding", "not", "contains")
_ANNOTATIONS: Final = ("description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly",
                       "$comment", "$id", "$anchor")
_DESCRIPTION_FIELDS: Final = ("description", "title", "annotations", "icons")
_HANDLED: Final = frozenset({"type", "enum", "properties", "required", "additionalProperties", "items", "anyOf",
                             "oneOf", "allOf", "$defs", "definitions", "uniqueItems",
                             *_LOWER, *_UPPER, *_RESTRICTING, *_ANNOTATIONS})


@dataclass(slots=True)
class Change:
    """One difference between the two catalogues, classified."""

    list: str  # tools, resources, resourceTemplates, prompts, instructions
    item: str
    kind: str  # breaking, compatible, description
    what: str
    before: Any = None  # the text a description change replaced, and its replacement (raw)
    after: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.item, "list": self.list, "kind": self.kind, "what": self.what}
        if self.kind == "description":
            out.update(before=self.before, after=self.after)
        return out

    @property
    def label(self) -> str:
        return "instructions" if self.list == "instructions" else f"{_SINGULAR[self.list]} {self.item}"


# --- the options, and OLD ---


class FailOnAction(argparse.Action):
    """`--fail-on` takes finding strengths (must, should, heuristic: one at most) and, with
    `--compare`, the kinds of change that fail the run, comma-separated and repeatable:
    `--fail-on breaking,description`, `--fail-on heuristic,breaking`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from mcp_tempest.fuzz.findings import FAIL_ON_CHOICES

        kinds = list(getattr(namespace, "fail_on_changes", None) or [])
        strengths: list[str] = []
        for part in str(values).split(","):
            word = part.strip().lower()
            if word in FAIL_ON_CHOICES:
                strengths.append(word)
            elif word in KINDS:
                kinds.append(word)
            else:
                parser.error(f"--fail-on: {word!r} is neither a finding strength ({', '.join(FAIL_ON_CHOICES)}) "
                             f"nor a kind of change ({', '.join(KINDS)})")
        if len(set(strengths)) > 1:
            parser.error("--fail-on: name one finding strength at most")
        if strengths:
            setattr(namespace, self.dest, strengths[0])
        namespace.fail_on_changes = sorted(set(kinds), key=KINDS.index) or None


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compare", metavar="OLD", help="compare with an earlier release: a target, or a file saved by "
                   "`catalogue --json` or `fuzz` (findings.json); each change is breaking, compatible or description")
    p.add_argument("--max-token-growth", metavar="N", help="with --compare: exit 1 when the catalogue grew by more "
                   "than N tokens (or N%% of the old one's)")
    p.set_defaults(fail_on_changes=None)


@dataclass(frozen=True, slots=True)
class Gate:
    """What fails a comparison: its kinds of change, and how much growth in tokens is too much."""

    kinds: tuple[str, ...] = DEFAULT_FAIL_ON_CHANGES
    max_growth: float | None = None
    percent: bool = False

    def describe_growth(self) -> str:
        return f"{self.max_growth:g}%" if self.percent else f"{self.max_growth:g} tokens"


def gate_from_args(args: argparse.Namespace) -> Gate | None:
    """The comparison's gate, or None without --compare; InputError on an option that needs it."""
    if args.compare is None:
        if args.max_token_growth is not None:
            raise validate.InputError("--max-token-growth needs --compare OLD")
        if args.fail_on_changes:
            raise validate.InputError(f"--fail-on {','.join(args.fail_on_changes)} needs --compare OLD")
        return None
    limit, percent = None, False
    if args.max_token_growth is not None:
        text = str(args.max_token_growth).strip()
        percent = text.endswith("%")
        try:
            limit = float(text[:-1] if percent else text)
        except ValueError:
            limit = None
        if limit is None or limit != limit or limit in (float("inf"), float("-inf")) or limit < 0:
            raise validate.InputError(f"--max-token-growth must be a number of tokens or a percentage, zero or more "
                                      f"(got {text!r})")
    return Gate(tuple(args.fail_on_changes or DEFAULT_FAIL_ON_CHANGES), limit, percent)


def load_old(text: str, *, timeout: float, budget: ListBudget | None, allow_remote: bool) -> Catalogue:
    """OLD as a catalogue: a target read once (no drift check: that is the new side's), or a saved
    file. Raises validate.InputError with one line naming OLD when it cannot be had."""
    text = text.strip()
    if text.startswith(TARGET_PREFIXES):
        try:
            spec = parse_target(text, allow_remote=allow_remote)
            reading = read(spec, timeout=timeout, budget=budget, drift=False)
        except (TargetError, ProbeFailure) as exc:
            raise validate.InputError(f"--compare OLD: {exc}") from None
        return Catalogue.from_probe(reading.first)
    return saved_catalogue(Path(text))


def saved_catalogue(path: Path) -> Catalogue:
    """The catalogue a `catalogue --json` output, a catalogue.json or a findings.json holds (of
    `fuzz`: its first target's), rebuilt from its definitions."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise validate.InputError(f"--compare OLD: cannot read {str(path)!r} ({exc.strerror or exc}); OLD is a file "
                                  f"saved by `catalogue --json` or `fuzz`, or a target ({', '.join(TARGET_PREFIXES)})"
                                  ) from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise validate.InputError(f"--compare OLD: {str(path)!r} is not JSON") from None
    if isinstance(doc, dict) and "catalogue" in doc:  # findings.json: fuzz's (a list) or catalogue's (one)
        doc = doc["catalogue"]
        if isinstance(doc, list):
            if not doc:
                raise validate.InputError(f"--compare OLD: {str(path)!r} holds no catalogue")
            doc = doc[0]  # the campaign's first target; a --compare-target's is not measured
    if not isinstance(doc, dict) or not isinstance(doc.get("tools"), list):
        raise validate.InputError(f"--compare OLD: {str(path)!r} is not a catalogue (`catalogue --json`, "
                                  "catalogue.json, or a findings.json of `fuzz` or `catalogue`)")
    defs = doc.get("definitions")
    if not isinstance(defs, dict):
        raise validate.InputError(f"--compare OLD: {str(path)!r} holds costs but not the definitions (saved by an "
                                  "earlier mcp-tempest): save it again, or give the old release as a target")
    items: dict[str, list[Any]] = {}
    for kind in ITEM_KEY:
        value = defs.get(kind, [])
        if not isinstance(value, list):
            raise validate.InputError(f"--compare OLD: {str(path)!r}: definitions.{kind} is not a list")
        items[kind] = value
    instructions = defs.get("instructions")
    listed = [n for n in (*_strings(doc.get("truncated")), *_strings(doc.get("failed"))) if n in ITEM_KEY]
    cat = Catalogue(target=str(doc.get("target") or path), era=str(doc.get("era") or "unknown"),
                    version=doc.get("version") if isinstance(doc.get("version"), str) else None,
                    legacy=doc.get("legacy") is True, items=items,
                    instructions=instructions if isinstance(instructions, str) else None,
                    truncated=[n for n in listed if n in _strings(doc.get("truncated"))],
                    failed=[n for n in listed if n in _strings(doc.get("failed"))])
    # Counted again, as Catalogue.from_probe counts a live read: the same counter on both sides.
    cat.costs = {kind: sorted((measure_item(kind, it) for it in its), key=lambda c: (-c.tokens, c.name))
                 for kind, its in items.items()}
    return cat


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def saved_definitions(cat: Catalogue) -> orjson.Fragment:
    """The definitions a catalogue was measured on, as the server sent them, for `definitions` in
    `catalogue --json` and findings.json: what a later `--compare` reads. Encoded at once, so the
    parsed lists can be let go before the reports are written (a fragment is written as it is)."""
    return definitions_fragment(cat.items, cat.instructions)


# --- the comparison ---


@dataclass(slots=True)
class Comparison:
    """Every change from `old` to `new`, each tool's cost before and after, and the verdict."""

    source: str  # OLD as given
    old: Catalogue
    new: Catalogue
    gate: Gate
    changes: list[Change] = field(default_factory=list)
    incomplete: str = ""  # why the comparison is a lower bound: a list cut short or unreadable

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)

    @property
    def growth(self) -> int:
        """Growth of what the model pays every turn (tool definitions as one list + instructions),
        the catalogue's headline and the figure --max-token-growth gates."""
        return self.new.turn_tokens - self.old.turn_tokens

    def tool_costs(self) -> list[tuple[str, int | None, int | None]]:
        """(tool, tokens before, after) for every tool of either side: the new ones costliest first,
        then the removed ones."""
        before = {c.name: c.tokens for c in self.old.costs.get("tools", [])}
        after = {c.name: c.tokens for c in self.new.costs.get("tools", [])}
        rows = [(name, before.get(name), tokens) for name, tokens in after.items()]
        rows += [(name, tokens, None) for name, tokens in before.items() if name not in after]
        return rows

    @property
    def failed(self) -> str:
        """Why the comparison fails the run, in one line; empty when it passes."""
        reasons: list[str] = []
        for kind in self.gate.kinds:
            hits = [c for c in self.changes if c.kind == kind]
            if hits:
                named = "; ".join(f"{c.label[:NAME_WIDTH]}: {c.what[:160]}" for c in hits[:3])
                reasons.append(f"{len(hits)} {kind} change(s) ({named}{' ...' if len(hits) > 3 else ''})")
        if self.gate.max_growth is not None:
            old_total = self.old.turn_tokens
            over = (self.growth * 100 > self.gate.max_growth * old_total if self.gate.percent
                    else self.growth > self.gate.max_growth)
            if over:
                reasons.append(f"every turn grew by {self.growth} tokens ({_percent(self.growth, old_total)}), "
                               f"more than --max-token-growth {self.gate.describe_growth()}")
        if self.incomplete and not reasons:
            # A list cut short hides what it did not read: "no breaking change" cannot be claimed.
            return f"--compare: the comparison cannot be checked: {self.incomplete}"
        return f"--compare: {'; '.join(reasons)}" if reasons else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "old": {"source": self.source, "target": self.old.target, "era": self.old.era,
                    "version": self.old.version, "total_tokens": self.old.total_tokens,
                    "complete": self.old.complete},
            "changes": [c.to_json() for c in self.changes],
            "counts": {kind: self.count(kind) for kind in KINDS},
            "tools": [{"name": n, "before": b, "after": a} for n, b, a in self.tool_costs()],
            "tokens": {"before": self.old.turn_tokens, "after": self.new.turn_tokens, "growth": self.growth,
                       "every_turn": True},
            "complete": not self.incomplete,
            "incomplete": self.incomplete or None,
            "fail_on": list(self.gate.kinds),
            "max_token_growth": self.gate.describe_growth() if self.gate.max_growth is not None else None,
            "failed": self.failed or None,
        }

    def lines(self) -> Iterator[str]:
        """The screen: OLD, every change (the most serious first), each changed tool's cost, totals."""
        old = self.old
        saved = f"saved from {visible(old.target)}, " if old.target != self.source else ""
        yield (f"compared with: {visible(self.source)} ({saved}{old.era_label}, {len(old.costs.get('tools', []))} "
               f"tools, {old.total_tokens} tokens)")
        if not self.changes:
            yield "no change in the catalogue's definitions"
        ordered = sorted(self.changes, key=lambda c: KINDS.index(c.kind))
        lines_used, count = 0, 0
        for c in ordered:
            lines = [f"{c.kind.upper():<12} {visible(c.label, NAME_WIDTH)}: {visible(c.what, 200)}"]
            if (c.kind == "description" and (c.before is not None or c.after is not None)
                    and isinstance(c.before, str | None) and isinstance(c.after, str | None)):
                was, now = excerpt(c.before, c.after)
                if len(was) + len(now) <= INLINE:
                    lines[0] += f": {was} -> {now}"
                else:
                    lines += [f"{'':<12}   was: {was}", f"{'':<12}   now: {now}"]
            if lines_used + len(lines) > SHOWN_LINES:
                break
            lines_used, count = lines_used + len(lines), count + 1
            yield from lines
        if count < len(ordered):
            left = ordered[count:]
            yield (f"... {len(left)} more changes ({', '.join(f'{sum(1 for c in left if c.kind == k)} {k}' for k in KINDS)}"
                   "; every one is in --json and catalogue.json)")
        rows = [r for r in self.tool_costs() if r[1] != r[2]]
        # within COLUMNS: the name column leaves room for the numbers and a change like `+1234 (+999.9%)`
        width = min(max([columns(visible(r[0], NAME_WIDTH)) for r in rows[:SHOWN_TOOLS]] + [20]), COLUMNS - 36)
        if rows:
            yield f"{'tool tokens':<{width}}  {'before':>7}  {'after':>7}  change"
            for name, before, after in rows[:SHOWN_TOOLS]:
                change = ("removed" if after is None else "added" if before is None
                          else f"{after - before:+d} ({_percent(after - before, before)})")
                yield (f"{cell(visible(name, NAME_WIDTH), width)}  {'-' if before is None else before:>7}  "
                       f"{'-' if after is None else after:>7}  {change}")
            if len(rows) > SHOWN_TOOLS:
                yield f"... {len(rows) - SHOWN_TOOLS} more tools whose cost changed"
        same = len(self.tool_costs()) - len(rows)
        if same:
            yield f"{same} tool(s) cost the same as before"
        if self.incomplete:
            yield f"note: {visible(self.incomplete)}"

    def summary_line(self) -> str:
        counts = ", ".join(f"{self.count(kind)} {kind}" for kind in KINDS)
        return (f"compare: {counts}; every turn {self.old.turn_tokens} -> {self.new.turn_tokens} tokens "
                f"({self.growth:+d}, {_percent(self.growth, self.old.turn_tokens)})"
                + (", INCOMPLETE" if self.incomplete else "")
                + f"; {'FAILS' if self.failed else 'passes'} --fail-on {','.join(self.gate.kinds)}"
                + (f" --max-token-growth {self.gate.describe_growth()}" if self.gate.max_growth is not None else ""))


def _percent(delta: int, base: int | None) -> str:
    if not base:
        return "new" if delta else "+0%"
    return f"{delta * 100 / base:+.1f}%"


def excerpt(before: str | None, after: str | None, width: int = EXCERPT) -> tuple[str, str]:
    """Both texts cut to where they differ, with `width` characters either side, escaped: a long
    description with one sentence slipped into its middle shows that sentence, not its start."""
    a, b = before or "", after or ""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1

    def cut(s: str) -> str:
        if not s:
            return "(none)"
        lo, hi = max(0, start - width), min(len(s), len(s) - end + width)
        shown = s[lo:hi]
        return ("..." if lo else "") + visible(shown, 4 * width + 40) + ("..." if hi < len(s) else "")

    return cut(a), cut(b)


def compare(source: str, old: Catalogue, new: Catalogue, gate: Gate | None = None) -> Comparison:
    """Every change from `old` to `new`. A list cut short on either side is compared only over the
    items both hold (one past the cut has not disappeared); a list unreadable on either side is not
    compared; either makes the comparison incomplete, and says why."""
    result = Comparison(source, old, new, gate or Gate())
    unreadable = set(old.failed) | set(new.failed)
    partial = frozenset(set(old.truncated) | set(new.truncated))
    a = {k: v for k, v in old.items.items() if k not in unreadable}
    b = {k: v for k, v in new.items.items() if k not in unreadable}
    gaps = [f"{side} {n} {how}" for side, cat in (("old", old), ("new", new))
            for how, names in (("cut short", cat.truncated), ("unreadable", cat.failed)) for n in names]
    result.incomplete = "; ".join(gaps)
    out = result.changes
    for kind in ITEM_KEY:
        if kind not in a or kind not in b:
            continue
        olds = {item_name(kind, it): it for it in a[kind]}
        news = {item_name(kind, it): it for it in b[kind]}
        found = [(name, what) for k, name, what in diff_listings({kind: a[kind]}, {kind: b[kind]}, partial) if k == kind]
        gone = [name for name, what in found if what == "disappeared"]
        came = [name for name, what in found if what == "appeared"]
        renames = _renames(kind, gone, came, olds, news)
        for name, what in found:
            if what == "disappeared":
                if name in renames:
                    out.append(Change(kind, name, "breaking", f"renamed to `{renames[name]}` (the same definition "
                                      "otherwise): a caller of the old name fails"))
                else:
                    out.append(Change(kind, name, "breaking", "removed"))
            elif what == "appeared":
                if name not in renames.values():
                    out.append(Change(kind, name, "compatible", "added"))
            else:
                out += _item_changes(kind, name, olds[name], news[name])
    if old.instructions != new.instructions:
        out.append(Change("instructions", "instructions", "description", "the server's instructions changed",
                          old.instructions, new.instructions))
    return result


def _renames(kind: str, gone: list[str], came: list[str], olds: dict[str, Any], news: dict[str, Any]
             ) -> dict[str, str]:
    """Old name -> new name, only where one item that disappeared and one that appeared are the same
    definition but for the name, and neither has another such twin: anything less certain stays
    a removal and an addition."""
    key = ITEM_KEY[kind]

    def rest(item: Any) -> str | None:  # the definition but for its name, as text: one hash per item
        return json_text({k: v for k, v in item.items() if k not in (key, "_meta")}) if isinstance(item, dict) else None

    came_by: dict[str, list[str]] = {}
    for c in came:
        text = rest(news[c])
        if text is not None:
            came_by.setdefault(text, []).append(c)
    gone_by: dict[str, list[str]] = {}
    for g in gone:
        text = rest(olds[g])
        if text is not None:
            gone_by.setdefault(text, []).append(g)
    return {g[0]: came_by[text][0] for text, g in gone_by.items() if len(g) == 1 and len(came_by.get(text, ())) == 1}


def _item_changes(kind: str, name: str, x: Any, y: Any) -> list[Change]:
    out: list[Change] = []

    def add(change_kind: str, what: str, before: Any = None, after: Any = None) -> None:
        out.append(Change(kind, name, change_kind, what, before, after))

    if not (isinstance(x, dict) and isinstance(y, dict)):
        add("breaking", "definition changed (not an object on one side)")
        return out
    key = ITEM_KEY[kind]
    for field_name in sorted(k for k in x.keys() | y.keys() if k not in ("_meta", key)):
        a, b = x.get(field_name), y.get(field_name)
        if same_json(a, b):
            continue
        if field_name in ("description", "title") or (kind != "tools" and field_name == "name"):
            add("description", f"{field_name} changed", a, b)
        elif field_name == "annotations" and isinstance(a, dict) and isinstance(b, dict):
            hints = sorted(k for k in a.keys() | b.keys() if not same_json(a.get(k), b.get(k)))
            add("description", "annotations changed: " + ", ".join(
                f"{k} {_brief(a.get(k))} -> {_brief(b.get(k))}" for k in hints))
        elif field_name in _DESCRIPTION_FIELDS:
            add("description", f"{field_name} changed: {_brief(a)} -> {_brief(b)}")
        elif kind == "tools" and field_name == "inputSchema":
            _schema(a, b, "", "input", 0, add)
        elif kind == "tools" and field_name == "outputSchema":
            if a is None:
                add("compatible", "output schema added (structured results declared)")
            elif b is None:
                add("breaking", "output schema removed: structured results no longer promised")
            else:
                _schema(a, b, "", "output", 0, add)
        elif kind == "prompts" and field_name == "arguments":
            _prompt_arguments(a, b, add)
        elif kind != "tools" and field_name == "size":
            add("description", f"size changed: {_brief(a)} -> {_brief(b)}")
        elif a is None:
            add("compatible", f"`{field_name}` added: {_brief(b)}")
        else:
            add("breaking", f"`{field_name}` {'removed' if b is None else 'changed'}: {_brief(a)} -> {_brief(b)}"
                + ("" if field_name == "mimeType" else " (not classified, so counted as breaking)"))
    return out


def _brief(value: Any, limit: int = 80) -> str:
    if value is None:
        return "(none)"
    text = json_text(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _prompt_arguments(a: Any, b: Any, add: Any) -> None:
    def by_name(args: Any) -> dict[str, dict[str, Any]] | None:
        if args is None:
            return {}
        if not isinstance(args, list) or not all(isinstance(x, dict) for x in args):
            return None
        return {str(x.get("name")): x for x in args}

    old, new = by_name(a), by_name(b)
    if old is None or new is None:
        add("breaking", "arguments changed (not a list of arguments on one side)")
        return
    for name in old.keys() - new.keys():
        add("breaking", f"argument `{name}` removed")
    for name in sorted(new.keys() - old.keys()):
        if new[name].get("required") is True:
            add("breaking", f"required argument `{name}` added")
        else:
            add("compatible", f"optional argument `{name}` added")
    for name in sorted(old.keys() & new.keys()):
        x, y = old[name], new[name]
        was, now = x.get("required") is True, y.get("required") is True
        if now and not was:
            add("breaking", f"argument `{name}` made required")
        elif was and not now:
            add("compatible", f"argument `{name}` no longer required")
        for k in sorted(k for k in x.keys() | y.keys() if k not in ("name", "required", "_meta")):
            if not same_json(x.get(k), y.get(k)):
                add("description", f"argument `{name}` {k} changed", x.get(k), y.get(k))


# --- the schema walk ---

# A change of the values a schema accepts: narrowed (fewer), widened (more), or neither provably.
NARROWED, WIDENED, CHANGED = "narrowed", "widened", "changed"


def _verdict(effect: str, side: str) -> str:
    """Fewer values a caller may send breaks the caller; more values a reader may get breaks the reader."""
    if effect == CHANGED:
        return "breaking"
    if side == "input":
        return "breaking" if effect == NARROWED else "compatible"
    return "breaking" if effect == WIDENED else "compatible"


def _where(path: str, side: str) -> str:
    if side == "input":
        return f"argument `{path}`" if path else "the arguments"
    return f"output member `{path}`" if path else "the output"


def _types(schema: dict[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None  # any type
    names = {t} if isinstance(t, str) else {x for x in t if isinstance(x, str)} if isinstance(t, list) else set()
    return names | {"integer"} if "number" in names else names


def _schema(a: Any, b: Any, path: str, side: str, depth: int, add: Any) -> None:
    """Each difference of two schemas at `path`, classified for `side` (input or output)."""
    if same_json(a, b):
        return
    where = _where(path, side)
    if not (isinstance(a, dict) and isinstance(b, dict)):
        effect = WIDENED if b is True or a is False else NARROWED if b is False or a is True else CHANGED
        add(_verdict(effect, side), f"{where}: schema {effect}: {_brief(a)} -> {_brief(b)}")
        return
    if depth >= MAX_SCHEMA_DEPTH:
        add("breaking", f"{where}: changed below {MAX_SCHEMA_DEPTH} levels (not classified, so counted as breaking)")
        return

    def effect_of(effect: str, what: str) -> None:
        add(_verdict(effect, side), f"{where}: {what}")

    # type
    if not same_json(a.get("type"), b.get("type")):
        ta, tb = _types(a), _types(b)
        shown = f"{_brief(a.get('type'))} -> {_brief(b.get('type'))}"
        if side == "output":
            add("breaking", f"{where}: type changed: {shown}")
        elif tb is not None and (ta is None or tb < ta):
            effect_of(NARROWED, f"type narrowed: {shown}")
        elif ta is not None and (tb is None or tb > ta):
            effect_of(WIDENED, f"type widened: {shown}")
        else:
            effect_of(CHANGED, f"type changed: {shown}")
    # enum
    if not same_json(a.get("enum"), b.get("enum")):
        ea, eb = a.get("enum"), b.get("enum")
        if isinstance(ea, list) and isinstance(eb, list):
            sa, sb = {json_text(v): v for v in ea}, {json_text(v): v for v in eb}
            if sa.keys() - sb.keys():
                effect_of(NARROWED, f"enum narrowed: {', '.join(sorted(sa.keys() - sb.keys()))} removed")
            if sb.keys() - sa.keys():
                effect_of(WIDENED, f"enum widened: {', '.join(sorted(sb.keys() - sa.keys()))} added")
        elif ea is None:
            effect_of(NARROWED, f"enum added: only {_brief(eb)}")
        elif eb is None:
            effect_of(WIDENED, f"enum removed: was {_brief(ea)}")
        else:
            effect_of(CHANGED, f"enum changed: {_brief(ea)} -> {_brief(eb)}")
    # limits
    for word, tighter in ((w, 1) for w in _LOWER):
        _limit(a, b, word, tighter, effect_of)
    for word, tighter in ((w, -1) for w in _UPPER):
        _limit(a, b, word, tighter, effect_of)
    if not same_json(a.get("uniqueItems"), b.get("uniqueItems")):
        effect_of(NARROWED if b.get("uniqueItems") is True else WIDENED,
                  f"uniqueItems {_brief(a.get('uniqueItems'))} -> {_brief(b.get('uniqueItems'))}")
    for word in _RESTRICTING:
        if not same_json(a.get(word), b.get(word)):
            effect = NARROWED if word not in a else WIDENED if word not in b else CHANGED
            effect_of(effect, f"{word} {'added' if word not in a else 'removed' if word not in b else 'changed'}: "
                      f"{_brief(a.get(word))} -> {_brief(b.get(word))}")
    # annotations: what the model reads about the argument
    for word in _ANNOTATIONS:
        if same_json(a.get(word), b.get(word)):
            continue
        if word in ("description", "title"):
            add("description", f"{where}: {word} changed", a.get(word), b.get(word))
        else:
            add("description", f"{where}: {word} changed: {_brief(a.get(word))} -> {_brief(b.get(word))}")
    _object(a, b, path, side, depth, add, effect_of)
    # items, alternatives, definitions
    ia, ib = a.get("items"), b.get("items")
    if not same_json(ia, ib):
        if ia is None or ib is None:
            effect_of(WIDENED if ib is None else NARROWED, f"items {'removed' if ib is None else 'added'}")
        else:
            _schema(ia, ib, f"{path}[]", side, depth + 1, add)
    for word in ("anyOf", "oneOf", "allOf"):
        la, lb = a.get(word), b.get(word)
        if same_json(la, lb):
            continue
        if isinstance(la, list) and isinstance(lb, list):
            sa, sb = {json_text(v) for v in la}, {json_text(v) for v in lb}
            fewer, more = (WIDENED, NARROWED) if word == "allOf" else (NARROWED, WIDENED)
            if sa - sb:
                effect_of(fewer, f"{word}: {len(sa - sb)} alternative(s) removed" if word != "allOf"
                          else f"allOf: {len(sa - sb)} condition(s) removed")
            if sb - sa:
                effect_of(more, f"{word}: {len(sb - sa)} alternative(s) added" if word != "allOf"
                          else f"allOf: {len(sb - sa)} condition(s) added")
        else:
            effect_of(NARROWED if la is None else WIDENED if lb is None else CHANGED,
                      f"{word} {'added' if la is None else 'removed' if lb is None else 'changed'}")
    for word in ("$defs", "definitions"):
        da, db = a.get(word), b.get(word)
        if isinstance(da, dict) and isinstance(db, dict):
            for name in sorted(da.keys() & db.keys()):
                _schema(da[name], db[name], f"{path}#{word}/{name}" if path else f"#{word}/{name}", side,
                        depth + 1, add)
        # a definition added or dropped matters only through a $ref, whose change is reported itself
    for word in sorted(k for k in a.keys() | b.keys() if k not in _HANDLED and not same_json(a.get(k), b.get(k))):
        effect_of(CHANGED, f"`{word}` {'added' if word not in a else 'removed' if word not in b else 'changed'}: "
                  f"{_brief(a.get(word))} -> {_brief(b.get(word))} (not classified, so counted as breaking)")


def _limit(a: dict[str, Any], b: dict[str, Any], word: str, tighter: int, effect_of: Any) -> None:
    """A bound: `tighter` 1 for a lower one (raising it narrows), -1 for an upper one."""
    x, y = a.get(word), b.get(word)
    if same_json(x, y):
        return
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y))
    if x is None:
        effect_of(NARROWED, f"{word} {_brief(y)} added")
    elif y is None:
        effect_of(WIDENED, f"{word} {_brief(x)} removed")
    elif numeric:
        narrowed = (y - x) * tighter > 0
        effect_of(NARROWED if narrowed else WIDENED, f"{word} {'narrowed' if narrowed else 'widened'}: {x} -> {y}")
    else:
        effect_of(CHANGED, f"{word} changed: {_brief(x)} -> {_brief(y)}")


def _object(a: dict[str, Any], b: dict[str, Any], path: str, side: str, depth: int, add: Any,
            effect_of: Any) -> None:
    """properties, required, additionalProperties: the members of an object."""
    pa, pb = a.get("properties"), b.get("properties")
    pa = pa if isinstance(pa, dict) else {}
    pb = pb if isinstance(pb, dict) else {}
    ra = {r for r in a.get("required", []) if isinstance(r, str)} if isinstance(a.get("required"), list) else set()
    rb = {r for r in b.get("required", []) if isinstance(r, str)} if isinstance(b.get("required"), list) else set()

    def sub(name: str) -> str:
        return f"{path}.{name}" if path else name

    for name in sorted(pa.keys() - pb.keys()):
        add("breaking", f"{_where(sub(name), side)} removed")
    for name in sorted(pb.keys() - pa.keys()):
        if side == "input" and name in rb:
            add("breaking", f"required argument `{sub(name)}` added")
        elif side == "input":
            add("compatible", f"optional argument `{sub(name)}` added")
        else:
            add("compatible", f"{_where(sub(name), side)} added")
    for name in sorted(pa.keys() & pb.keys()):
        _schema(pa[name], pb[name], sub(name), side, depth + 1, add)
    for name in sorted(rb - ra):
        if side == "input" and name in pb and name not in pa:
            continue  # a new required argument, said above
        if side == "input":
            add("breaking", f"{_where(sub(name), side)} made required")
        elif name in pb:
            add("compatible", f"{_where(sub(name), side)} now always present")
    for name in sorted(ra - rb):
        if name in pa and name not in pb:
            continue  # removed, said above
        if side == "input":
            add("compatible", f"{_where(sub(name), side)} no longer required")
        else:
            add("breaking", f"{_where(sub(name), side)} no longer always present")
    xa, xb = a.get("additionalProperties"), b.get("additionalProperties")
    if not same_json(xa, xb):
        open_a, open_b = xa in (None, True), xb in (None, True)
        if open_a and xb is False or (isinstance(xa, dict) and xb is False) or (open_a and isinstance(xb, dict)):
            effect_of(NARROWED, f"additionalProperties {_brief(xa)} -> {_brief(xb)}"
                      + (": members not listed are now refused" if xb is False else ""))
        elif open_b or (xa is False and isinstance(xb, dict)):
            effect_of(WIDENED, f"additionalProperties {_brief(xa)} -> {_brief(xb)}")
        elif isinstance(xa, dict) and isinstance(xb, dict):
            _schema(xa, xb, sub("*"), side, depth + 1, add)
        else:
            effect_of(CHANGED, f"additionalProperties {_brief(xa)} -> {_brief(xb)}")
