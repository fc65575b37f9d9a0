"""`--tool-args FILE` and `[tool.mcp-tempest.tool-args]`: the argument values no fuzzer can guess.

Why: an account id, a project that exists, a token a tool checks: without one, every call of
that tool is refused at its first check and its body never runs. The user names them once, per
tool and argument; generation offers them first and most often (strategies/value_sources.py).

Shape (JSON, or TOML as below): tool name -> argument name -> a value or a list of alternative
values; the tool `"*"` applies to every tool with an argument of that name. An argument whose
value is itself a list is written as a list of one list.

    [tool.mcp-tempest.tool-args.git_log]
    repo_path = "/srv/repo"
    max_count = [1, 10]
    [tool.mcp-tempest.tool-args."*"]
    project_id = "4711"
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from mcp_tempest.fuzz.config import TABLE, find_pyproject

KEY = "tool-args"
MAX_BYTES = 4 * 1024 * 1024


class ToolArgsError(Exception):
    """A --tool-args file or table the campaign cannot use; the message is one line."""


def _from_pyproject(data: dict[str, Any]) -> Any:
    return data.get("tool", {}).get(TABLE, {}).get(KEY)


def load_tool_args(path: str | None, cwd: Path | None = None) -> dict[str, dict[str, list[Any]]]:
    """The user's values, normalised to tool -> argument -> list of alternatives; {} when there
    are none. `path` None: the `[tool.mcp-tempest.tool-args]` table of the nearest pyproject.toml."""
    if path is None:
        found = find_pyproject(cwd or Path.cwd())
        if found is None:
            return {}
        try:
            raw = _from_pyproject(tomllib.loads(found.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return {}  # the config layer reports an unreadable pyproject.toml
        return _normalise(raw, f"{found} [tool.{TABLE}.{KEY}]") if raw is not None else {}
    file = Path(path)
    try:
        if file.stat().st_size > MAX_BYTES:
            raise ToolArgsError(f"--tool-args {path}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolArgsError(f"--tool-args {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ToolArgsError(f"--tool-args {path}: not UTF-8 text") from None
    try:
        if file.suffix == ".toml":
            data = tomllib.loads(text)
            raw = _from_pyproject(data) if file.name == "pyproject.toml" else data
            if raw is None:
                raise ToolArgsError(f"--tool-args {path}: no [tool.{TABLE}.{KEY}] table")
        else:
            raw = json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ToolArgsError(f"--tool-args {path}: not valid {'TOML' if file.suffix == '.toml' else 'JSON'}: "
                            f"{exc}".splitlines()[0]) from None
    return _normalise(raw, f"--tool-args {path}")


def _normalise(raw: Any, where: str) -> dict[str, dict[str, list[Any]]]:
    if not isinstance(raw, dict):
        raise ToolArgsError(f"{where}: must map tool names to tables of argument values")
    out: dict[str, dict[str, list[Any]]] = {}
    for tool, args in raw.items():
        if not isinstance(args, dict):
            raise ToolArgsError(f"{where}: {tool} must map argument names to values")
        out[str(tool)] = {}
        for arg, value in args.items():
            values = value if isinstance(value, list) else [value]
            if not values:
                raise ToolArgsError(f"{where}: {tool}.{arg} has no value")
            out[str(tool)][str(arg)] = values
    return out
