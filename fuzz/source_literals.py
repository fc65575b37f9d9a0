"""The string and number literals of a Python server's own source, as argument values.

Why: a tool that takes `branch_type: string` and matches it against "local", "remote" and "all"
refuses every generated string; the three words are in its source. Hypothesis draws on a test
module's constants the same way. Only literals a comparison, a `match` case, a container or a
default names are kept (docstrings and messages are prose, not values), bounded in files, bytes
and count so a large package costs little.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path
from typing import Any

MAX_FILES = 200
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_LITERALS = 200
MAX_TEXT = 64


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file() and path.suffix == ".py":
            out.append(path)
        elif path.is_dir():
            out += sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)[:MAX_FILES]
    return out[:MAX_FILES]


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        value = node.value
        if isinstance(value, str) and 0 < len(value) <= MAX_TEXT and "\n" not in value:
            return value
        if isinstance(value, int | float):
            return value
    return None


def _name_of(node: ast.AST) -> str:
    """The variable a literal is compared with: `kind` in `kind == "x"` and in `args.kind == "x"`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value  # arguments["kind"] == "x"
    return ""


def _literals_in(node: ast.AST) -> list[Any]:
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [v for v in (_value(i) for i in items) if v is not None]


def _pattern_literals(pattern: ast.AST) -> list[Any]:
    if isinstance(pattern, ast.MatchValue):
        return _literals_in(pattern.value)
    if isinstance(pattern, ast.MatchOr):
        return [v for p in pattern.patterns for v in _pattern_literals(p)]
    return []


def _compared(tree: ast.AST) -> list[tuple[str, Any]]:
    """(name, literal) for literals the code branches on: a comparison (`kind == "local"`,
    `kind in ("a", "b")`) or a `match kind:` case names the variable; dict keys and argument
    defaults name none ("")."""
    found: list[tuple[str, Any]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = [n for n in (_name_of(s) for s in sides) if n]
            for side in sides:
                found += [(names[0] if names else "", v) for v in _literals_in(side)]
        elif isinstance(node, ast.Match):
            name = _name_of(node.subject)
            for case in node.cases:
                found += [(name, v) for v in _pattern_literals(case.pattern)]
        elif isinstance(node, ast.Dict):
            found += [("", v) for k in node.keys if k is not None for v in _literals_in(k)]
        elif isinstance(node, ast.arguments):
            found += [("", v) for d in [*node.defaults, *(d for d in node.kw_defaults if d is not None)]
                      for v in _literals_in(d)]
    return found


def literals_of(paths: list[str]) -> tuple[dict[str, list[Any]], list[Any]]:
    """The literals the code under `paths` branches on: by the name of the variable they are
    compared with (an argument of that name is offered them first), and all of them, most
    frequent first, at most MAX_LITERALS each."""
    counts: dict[tuple[str, Any], int] = {}
    named: dict[str, list[Any]] = {}
    for path in _files(paths):
        with contextlib.suppress(OSError, SyntaxError, ValueError, RecursionError):
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            for name, value in _compared(ast.parse(path.read_bytes(), filename=str(path))):
                key = (type(value).__name__, value)
                counts[key] = counts.get(key, 0) + 1
                if name and value not in named.setdefault(name, []) and len(named[name]) < MAX_LITERALS:
                    named[name].append(value)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0][1])))
    return dict(list(named.items())[:MAX_LITERALS * 5]), [value for (_kind, value), _n in ranked[:MAX_LITERALS]]
