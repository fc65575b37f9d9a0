"""Options from the environment and from `[tool.mcp-gauntlet]` in pyproject.toml, before argparse.

Why here and in this form: a CI job sets the same few options on every run (target, budget, seed,
database, out, fail-on); writing them into pyproject.toml or the job's environment keeps command
lines short and secrets (a target URL with a token) out of them. Every layer is turned into the
command-line options it stands for and put *in front of* the user's own arguments, so argparse
stays the one parser and validator, and the precedence is simply:

    command line  >  MCP_GAUNTLET_<COMMAND>_<KEY>  >  MCP_GAUNTLET_<KEY>
                  >  [tool.mcp-gauntlet.<command>]  >  [tool.mcp-gauntlet]  >  built-in default

Keys are option names without the dashes (`max-examples`, or `max_examples`); an environment
variable is the key upper-cased with `_` (MCP_GAUNTLET_MAX_EXAMPLES). A key applies to a command
only if that command has the option, so `[tool.mcp-gauntlet] target = ...` serves fuzz, probe and
load alike. Options of one mutually exclusive budget (`max-examples`, `duration`) count as one:
the highest layer that sets either wins. pyproject.toml is the first one found from the current
directory upwards.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ENV_PREFIX = "MCP_GAUNTLET_"
TABLE = "mcp-gauntlet"
# Options that stand for one choice: whichever layer sets one of them decides for all of them.
EXCLUSIVE = (frozenset({"max-examples", "duration"}), frozenset({"database", "no-database"}))
# Environment variables that are not options (read by other code), never turned into flags.
NOT_OPTIONS = frozenset({"NO_COLOR"})


class ConfigError(Exception):
    """A configuration file or variable mcp-gauntlet cannot use; the message is one line."""


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _norm(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _options_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """`key -> action` for every long option the parser has (`--max-examples` -> `max-examples`)."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:  # argparse has no public list of its options
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in ("--help", "--version"):
                found[flag[2:]] = action
    return found


def _given_on_command_line(argv: Sequence[str]) -> set[str]:
    given: set[str] = set()
    for token in argv:
        if token == "--":
            break
        if token.startswith("--"):
            given.add(token[2:].split("=", 1)[0])
    return given


Layer = tuple[str, dict[str, Any], bool]  # (where it came from, key -> value, is it this command's own)


def _pyproject_layers(command: str, cwd: Path) -> list[Layer]:
    path = find_pyproject(cwd)
    if path is None:
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    table = data.get("tool", {}).get(TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    own = table.get(command, {})
    if not isinstance(own, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}.{command}] must be a table")
    shared = {k: v for k, v in table.items() if not isinstance(v, dict)}
    where = f"{path} [tool.{TABLE}"
    return [(f"{where}.{command}]", own, True), (f"{where}]", shared, False)]


def _env_layers(command: str, environ: Mapping[str, str]) -> list[Layer]:
    specific = f"{ENV_PREFIX}{command.upper().replace('-', '_')}_"
    own = {k[len(specific):]: v for k, v in environ.items() if k.startswith(specific)}
    shared = {k[len(ENV_PREFIX):]: v for k, v in environ.items()
              if k.startswith(ENV_PREFIX) and not k.startswith(specific) and k not in NOT_OPTIONS}
    return [(f"${specific}*", own, True), (f"${ENV_PREFIX}*", shared, False)]


def _flags(key: str, value: Any, action: argparse.Action, source: str) -> list[str]:
    flag = f"--{key}"
    if action.nargs == 0:  # store_true and friends
        if isinstance(value, str):
            value = value.strip().lower() in ("1", "true", "yes", "on")
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false, not {value!r}")
        return [flag] if value else []
    values = value if isinstance(value, list) else [value]
    if any(isinstance(v, dict | list) for v in values):
        raise ConfigError(f"{source}: {key} must be a string or a number")
    if isinstance(action, argparse._AppendAction):
        return [part for v in values for part in (flag, str(v))]
    if len(values) != 1:
        raise ConfigError(f"{source}: {key} takes one value")
    return [flag, str(values[0]).lower() if isinstance(values[0], bool) else str(values[0])]


def apply_config(command: str, argv: Sequence[str], parser: argparse.ArgumentParser, *,
                 environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> list[str]:
    """`argv` with the configured options in front, highest layer first among the configured ones."""
    environ = os.environ if environ is None else environ
    options = _options_of(parser)
    taken = _given_on_command_line(argv)
    for group in EXCLUSIVE:
        if taken & group:
            taken |= group
    layers = _env_layers(command, environ) + _pyproject_layers(command, cwd or Path.cwd())
    prefix: list[str] = []
    for label, values, own in layers:
        chosen: set[str] = set()
        for raw_key, value in values.items():
            key = _norm(raw_key)
            source = label.replace("*", raw_key) if label.endswith("*") else label
            if key not in options:
                if own:  # a command's own table or variable naming an option it lacks is a typo
                    raise ConfigError(f"{source}: mcp-gauntlet {command} has no option --{key}")
                continue  # a shared key serves the commands that have that option
            if key in taken:
                continue
            prefix += _flags(key, value, options[key], source)
            chosen.add(key)
        for group in EXCLUSIVE:
            if chosen & group:
                chosen |= group
        taken |= chosen
    return prefix + list(argv)
