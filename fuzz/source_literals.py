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


def _compared(tree: ast.AST) -> list[Any]:
    """Literals in comparisons (`x == "local"`, `x in ("a", "b")`), match cases, dict keys and
    argument defaults: the values code branches on."""
    found: list[Any] = []
    for node in ast.walk(tree):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            parts = [node.value]
        elif isinstance(node, ast.Dict):
            parts = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.arguments):
            parts = [*node.defaults, *(d for d in node.kw_defaults if d is not None)]
        for part in parts:
            items = part.elts if isinstance(part, ast.Tuple | ast.List | ast.Set) else [part]
            for item in items:
                value = _value(item)
                if value is not None:
                    found.append(value)
    return found


def literals_of(paths: list[str]) -> list[Any]:
    """The literals the code under `paths` branches on, most frequent first, at most MAX_LITERALS."""
    counts: dict[tuple[str, Any], int] = {}
    for path in _files(paths):
        with contextlib.suppress(OSError, SyntaxError, ValueError, RecursionError):
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            for value in _compared(ast.parse(path.read_bytes(), filename=str(path))):
                key = (type(value).__name__, value)
                counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0][1])))
    return [value for (_kind, value), _n in ranked[:MAX_LITERALS]]
