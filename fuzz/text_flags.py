"""Untrusted text in a catalogue: HEURISTIC observations, each with the offending span.

The spec tells clients to treat tool descriptions and annotations as untrusted unless the server
is: the server's author writes them and the host pastes them into the model's prompt. These
checks flag text that does something other than describe the tool. They are not DIGEST rules
(the digest has no id for them), so they carry the harness's own ids TEXT-01..05, are always
HEURISTIC, and never fail a run unless `--fail-on heuristic` asks for it. One plain function per
id, each taking the catalogue's strings and returning violations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.safe_text import BIDI, invisible_run
from mcp_tempest.fuzz.token_count import count_tokens, definition_text


@dataclass(frozen=True, slots=True)
class Text:
    """One string of the catalogue and where it sits (`tool search_events: description`)."""

    where: str
    text: str
    method: str | None


def catalogue_texts(items: dict[str, list[Any]], instructions: str | None) -> Iterator[Text]:
    """Every string a host may put into the prompt: all of each definition, keys and values.
    Made one at a time: 150,000 tools are a million strings, held at once 150 MB."""
    from mcp_tempest.fuzz.catalogue import METHOD, item_name

    if instructions:
        yield Text("instructions", instructions, "server/discover")
    for kind, listed in items.items():
        for item in listed:
            label = f"{kind[:-1] if kind != 'resourceTemplates' else 'template'} {item_name(kind, item)}"
            for path, s in _strings(item, ()):
                yield Text(f"{label}: {'.'.join(path) or '(value)'}", s, METHOD.get(kind))


def _strings(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string of `value` (keys too, `_meta` left out) with its path, in document order;
    walked with a stack of iterators, not recursion: what a server lists can nest any depth."""

    def children(node: Any, at: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "_meta":
                    continue
                if isinstance(k, str) and k:
                    yield (*at, "(key)"), k
                yield (*at, str(k)), v
        else:
            for i, v in enumerate(node):
                yield (*at, str(i)), v

    stack: list[Iterator[tuple[tuple[str, ...], Any]]] = [iter([(path, value)])]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item[1], str):
            yield item
        elif isinstance(item[1], dict | list):
            stack.append(children(item[1], item[0]))


def _span(text: str, start: int, end: int, context: int = 24) -> str:
    """The offending span with a little context, escaped so the report shows what is hidden."""
    lo, hi = max(0, start - context), min(len(text), end + context)
    return (("..." if lo else "") + text[lo:hi].encode("unicode_escape").decode("ascii")
            + ("..." if hi < len(text) else ""))


def _flag(rule: str, title: str, t: Text, start: int, end: int) -> Violation:
    return Violation(rule, "HEURISTIC", f"untrusted text: {title} in {t.where}",
                     f"at {start}: {_span(t.text, start, end)}", t.method)


# --- TEXT-01: invisible or bidirectional-control characters ---
# What is invisible is fuzz/safe_text.py's `invisible`: the same characters the reports escape.


def _text_01(t: Text) -> Violation | None:
    run = invisible_run(t.text)  # one per string: the span shows the first run
    if run is None:
        return None
    start, end = run
    kind = "bidirectional control" if any(c in BIDI for c in t.text[start:end]) else "invisible"
    return _flag("TEXT-01", f"{kind} characters", t, start, end)


def text_01(texts: Iterable[Text]) -> list[Violation]:
    return [v for t in texts if (v := _text_01(t)) is not None]


# --- TEXT-02: terminal escapes and other control characters ---

_CONTROL: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x9b]")


def _text_02(t: Text) -> Violation | None:
    m = _CONTROL.search(t.text)
    if m is None:
        return None
    what = "ANSI escape sequence" if m.group().startswith(("\x1b", "\x9b")) else "control character"
    return _flag("TEXT-02", what, t, m.start(), m.end())


def text_02(texts: Iterable[Text]) -> list[Violation]:
    return [v for t in texts if (v := _text_02(t)) is not None]


# --- TEXT-03: text addressed to the model rather than describing the tool ---

_ADDRESSED: Final = tuple(re.compile(p, re.I) for p in (
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|other)\s+"
    r"(?:instructions?|prompts?|messages?|rules?)",
    r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|reveal|show|notify)\b[^.\n]{0,40}\b(?:user|human)s?\b",
    r"\bwithout\s+(?:telling|informing|notifying)\s+the\s+(?:user|human)\b",
    r"<\s*/?\s*(?:important|system|hidden|secret|instructions?|admin|sudo)\s*>",
    r"\[\s*(?:system|hidden|important)\s*\]",
    r"\byou\s+are\s+now\b",
    r"\b(?:system|developer)\s+prompt\b",
    r"\bas\s+an?\s+(?:ai|assistant|language\s+model)\b",
))


def _text_03(t: Text) -> Violation | None:
    for pattern in _ADDRESSED:
        m = pattern.search(t.text)
        if m:
            return _flag("TEXT-03", "text addressed to the model", t, m.start(), m.end())
    return None


def text_03(texts: Iterable[Text]) -> list[Violation]:
    return [v for t in texts if (v := _text_03(t)) is not None]


# --- TEXT-04: naming other servers' tools ---

_TOOL_REFERENCE: Final = (
    re.compile(r"\bmcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+"),  # a host's namespaced tool name
    re.compile(r"\b(?:call|use|invoke|run)\s+(?:the\s+)?[`'\"]?([A-Za-z][A-Za-z0-9_.-]*)[`'\"]?\s+tool\b", re.I),
    re.compile(r"\b(?:tool|tools)\s+(?:named|called)\s+[`'\"]?([A-Za-z][A-Za-z0-9_.-]*)", re.I),
)


def _text_04(t: Text, own_tools: set[str]) -> Violation | None:
    for pattern in _TOOL_REFERENCE:
        m = next((m for m in pattern.finditer(t.text)
                  if (m.group(1) if m.groups() else m.group()) not in own_tools
                  and (m.group(1) if m.groups() else m.group()).lower() not in ("this", "that", "the", "a")),
                 None)
        if m:
            name = m.group(1) if m.groups() else m.group()
            return _flag("TEXT-04", f"names a tool this server does not list (`{name}`)", t, m.start(), m.end())
    return None


def text_04(texts: Iterable[Text], own_tools: set[str]) -> list[Violation]:
    return [v for t in texts if (v := _text_04(t, own_tools)) is not None]


# --- TEXT-05: a description far longer than its schema warrants ---

LONG_FLOOR: Final = 200  # tokens a description may always spend
LONG_RATIO: Final = 4  # and beyond that, this many times its inputSchema's tokens


def text_05(tools: list[Any]) -> list[Violation]:
    out: list[Violation] = []
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("description"), str):
            continue
        desc = count_tokens(tool["description"])
        schema = count_tokens(definition_text(tool.get("inputSchema", {})))
        if desc > max(LONG_FLOOR, LONG_RATIO * schema):
            t = Text(f"tool {tool.get('name')}: description", tool["description"], "tools/list")
            v = _flag("TEXT-05", "a description far longer than its schema warrants", t, 0, min(len(t.text), 80))
            out.append(Violation(v.rule, v.strength, v.title,
                                 f"{desc} description tokens for a {schema}-token inputSchema "
                                 f"(flagged above max({LONG_FLOOR}, {LONG_RATIO} x schema)); starts {v.detail}",
                                 v.method))
    return out


def flag_catalogue(items: dict[str, list[Any]], instructions: str | None) -> list[Violation]:
    """Every untrusted-text observation on one catalogue, in rule order: one walk over its
    strings, each judged by every rule and dropped (what is kept is the observations)."""
    tools = items.get("tools", [])
    own = {t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    rules: tuple[Callable[[Text], Violation | None], ...] = (
        _text_01, _text_02, _text_03, lambda t: _text_04(t, own))
    found: list[list[Violation]] = [[] for _ in rules]
    for t in catalogue_texts(items, instructions):
        for rule, out in zip(rules, found, strict=True):
            v = rule(t)
            if v is not None:
                out.append(v)
    return [v for out in found for v in out] + text_05(tools)
