"""Options from the environment and from `[tool.mcp-tempest]` in pyproject.toml, before argparse.

Why here and in this form: a CI job sets the same few options on every run (target, budget, seed,
database, out, fail-on); writing them into pyproject.toml or the job's environment keeps command
lines short and secrets (a target URL with a token) out of them. Every layer is turned into the
command-line options it stands for and put *in front of* the user's own arguments, so argparse
stays the one parser and validator, and the precedence is simply:

    command line  >  MCP_TEMPEST_<COMMAND>_<KEY>  >  MCP_TEMPEST_<KEY>
                  >  [tool.mcp-tempest.<command>]  >  [tool.mcp-tempest]  >  built-in default

Keys are option names without the dashes (`max-examples`, or `max_examples`); an environment
variable is the key upper-cased with `_` (MCP_TEMPEST_MAX_EXAMPLES). A key applies to a command
only if that command has the option, so `[tool.mcp-tempest] target = ...` serves fuzz, probe,
catalogue and load alike. Every command with options takes them this way, except the few options
that pick a one-off action (`--list`) or, in replay, what the reproduction file records
(COMMAND_LINE_ONLY). A table for no command (`[tool.mcp-tempest.fuz]`) is an error, like a key
no command has: configuration that silently does nothing is a CI gate that never gates. Options of one mutually exclusive budget (`max-examples`, `duration`) count as one:
the highest layer that sets either wins. pyproject.toml is the first one found from the current
directory upwards.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_tempest.fuzz.terminal_style import NO_COLOR_FLAG
from mcp_tempest.targets import renamed

ENV_PREFIX = "MCP_TEMPEST_"
TABLE = "mcp-tempest"
# Options that stand for one choice: whichever layer sets one of them decides for all of them.
EXCLUSIVE = (frozenset({"max-examples", "duration"}), frozenset({"database", "no-database"}))
# The commands that take configuration, and where their parsers are built (one list: fuzz/cli.py
# reads it too). A shared key or variable must be an option of at least one of them.
CONFIGURABLE: dict[str, tuple[str, str]] = {  # cheapest to import first: see _serves_some_command
    "serve": ("mcp_tempest.targets.reference.cli", "_parser"),
    "fuzz-client": ("mcp_tempest.fuzz.client.command", "build_parser"),
    "load": ("mcp_tempest.load.runner", "build_parser"),
    "fuzz": ("mcp_tempest.fuzz.campaign_command", "build_parser"),
    "replay": ("mcp_tempest.fuzz.replay", "build_parser"),
    "catalogue": ("mcp_tempest.fuzz.catalogue_command", "build_parser"),
    "probe": ("mcp_tempest.targets.probe", "build_parser"),
    "frames": ("mcp_tempest.strategies.frames_command", "_parser"),
}
# Options configuration never sets: a listing that replaces the command's work, and what a replay
# takes from its file (a shared `target` or `client` must not redirect it).
COMMAND_LINE_ONLY: dict[str, frozenset[str]] = {
    "fuzz": frozenset({"list-properties"}),
    "replay": frozenset({"target", "compare-target", "client"}),
    "frames": frozenset({"list"}),
    "serve": frozenset({"list-bugs"}),
}
TRUE, FALSE = "true", "false"
# Options every command takes, which fuzz/cli.py removes before the command's own parser runs:
# configured like any other (`no-color = true`, MCP_TEMPEST_NO_COLOR=1).
_EVERY_COMMAND = argparse.ArgumentParser(add_help=False)
_EVERY_COMMAND.add_argument(NO_COLOR_FLAG, action="store_true")


def not_options() -> frozenset[str]:
    """MCP_TEMPEST_* variables that are not options: what the harness hands its own children
    (the owner tag, the --header templates, the fork-server switch) and STATE_KEY, the shared
    requestState key the example servers under tests/servers/ read. Imported only when needed."""
    from mcp_tempest.targets import extra_headers, fork_server, ownership, processes

    return frozenset({ownership.TAG_VAR, extra_headers.HEADERS_ENV, fork_server.DISABLE_VAR,
                      processes.CODE_COVERAGE_VAR, processes.COVERAGE_CONTEXT_VAR, f"{ENV_PREFIX}STATE_KEY"})


class ConfigError(Exception):
    """A configuration file or variable mcp-tempest cannot use; the message is one line."""


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _norm(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _options_of(parser: argparse.ArgumentParser, command: str = "") -> dict[str, argparse.Action]:
    """`key -> action` for every long option of the parser that `command` takes from configuration
    (`--max-examples` -> `max-examples`)."""
    found: dict[str, argparse.Action] = {}
    skip = COMMAND_LINE_ONLY.get(command, frozenset())
    for action in [*parser._actions, *_EVERY_COMMAND._actions]:  # argparse has no public list of its options
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in ("--help", "--version") and flag[2:] not in skip:
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
    tools = data.get("tool", {})
    for table_name in (TABLE, renamed.OLD_TABLE):
        if isinstance(tools.get(table_name), dict):
            _check_tables(path, table_name, tools[table_name])
    name = TABLE
    if TABLE not in tools and renamed.OLD_TABLE in tools:  # a config from before the rename
        name = renamed.OLD_TABLE
        renamed.deprecated(f"[tool.{name}] in {path}", f"[tool.{TABLE}]")
    table = tools.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{name}] must be a table")
    own = table.get(command, {})
    if not isinstance(own, dict):
        raise ConfigError(f"{path}: [tool.{name}.{command}] must be a table")
    shared = {k: v for k, v in table.items() if not isinstance(v, dict)}
    where = f"{path} [tool.{name}"
    return [(f"{where}.{command}]", own, True), (f"{where}]", shared, False)]


def _check_tables(path: Path, name: str, table: dict[str, Any]) -> None:
    """Every sub-table names a command that takes configuration (or is the tool-args table, which
    fuzz/tool_args.py reads); else it would be dropped unread."""
    from mcp_tempest.fuzz import tool_args
    from mcp_tempest.fuzz.cli import COMMANDS

    for command, value in table.items():
        if not isinstance(value, dict) or command in CONFIGURABLE or command == tool_args.KEY:
            continue
        where = f"{path} [tool.{name}.{command}]"
        if command in COMMANDS:
            raise ConfigError(f"{where}: mcp-tempest {command} takes its options from the command line only")
        near = difflib.get_close_matches(command, [*CONFIGURABLE, tool_args.KEY], n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else f" (tables: {', '.join([*CONFIGURABLE, tool_args.KEY])})"
        raise ConfigError(f"{where}: no mcp-tempest command is called {command}{hint}")


def _prefix_of(command: str) -> str:
    return f"{ENV_PREFIX}{command.upper().replace('-', '_')}_"


def _env_layers(command: str, environ: Mapping[str, str]) -> list[Layer]:
    specific = _prefix_of(command)
    others = [_prefix_of(c) for c in CONFIGURABLE if c != command]
    mine = [k for k in environ if k.startswith(ENV_PREFIX)]
    if mine:
        skip = not_options()
        mine = [k for k in mine if k not in skip]
    # MCP_TEMPEST_FUZZ_CLIENT_SEED is fuzz-client's, not fuzz's option CLIENT_SEED
    own = {k[len(specific):]: environ[k] for k in mine
           if k.startswith(specific) and not any(k.startswith(o) for o in others if len(o) > len(specific))}
    # Another command's own variables (MCP_TEMPEST_LOAD_USERS) are that command's business.
    shared = {k[len(ENV_PREFIX):]: environ[k] for k in mine
              if not k.startswith(specific) and not any(k.startswith(o) for o in others)}
    return [(f"${specific}*", own, True), (f"${ENV_PREFIX}*", shared, False)]


_built: dict[str, frozenset[str]] = {}


def _configurable_keys(command: str) -> frozenset[str]:
    """The keys `command` takes, its parser built (and its module imported) only on first need."""
    if command not in _built:
        module, builder = CONFIGURABLE[command]
        _built[command] = frozenset(_options_of(getattr(importlib.import_module(module), builder)(), command))
    return _built[command]


def _serves_some_command(key: str) -> bool:
    """Whether another command takes `key`, stopping at the first that does: `mcp-tempest serve`
    started under MCP_TEMPEST_TARGET should not import every other command to learn it."""
    return any(key in _configurable_keys(name) for name in CONFIGURABLE)


def _all_keys() -> list[str]:
    return sorted({key for name in CONFIGURABLE for key in _configurable_keys(name)})


def _unknown(source: str, key: str, valid: Sequence[str], *, env: bool, what: str) -> ConfigError:
    """`source` names no option: the error names the nearest valid one, as it would be written there."""
    near = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
    if not near:  # typos that drop a separator (MAXEXAMPLES) are far apart as strings
        squashed = {v.replace("-", ""): v for v in valid}
        near = difflib.get_close_matches(key.replace("-", ""), list(squashed), n=1, cutoff=0.6)
        near = [squashed[n] for n in near]
    hint = ""
    if near:
        hint = f"; did you mean {source[:source.rindex(key.upper().replace('-', '_'))]}" \
               f"{near[0].upper().replace('-', '_')}?" if env else f"; did you mean {near[0]}?"
    return ConfigError(f"{source}: {what}{hint}")


def _flags(key: str, value: Any, action: argparse.Action, source: str) -> list[str]:
    """The command-line flags for one configured value, checked here so that every error names
    `source` (argparse's own would not say where the value came from)."""
    flag = f"--{key}"
    if action.nargs == 0:  # store_true and friends: only true or false, nothing that merely looks like it
        if isinstance(value, str) and value.strip().lower() in (TRUE, FALSE):
            value = value.strip().lower() == TRUE
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false, not {_short(value)}")
        return [flag] if value else []
    values = value if isinstance(value, list) else [value]
    if any(isinstance(v, dict | list) for v in values):
        raise ConfigError(f"{source}: {key} must be a string or a number")
    texts = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
    for text in texts:
        _check_value(key, text, action, source)
    if isinstance(action, argparse._AppendAction):
        return [part for text in texts for part in (flag, text)]
    if len(texts) != 1:
        raise ConfigError(f"{source}: {key} takes one value")
    return [flag, texts[0]]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_value(key: str, text: str, action: argparse.Action, source: str) -> None:
    """What argparse would refuse, refused with its source. Only typed options are converted:
    a plain string option (a target URL that may carry a token) is never echoed."""
    convert = action.type
    if callable(convert) and not isinstance(convert, argparse.FileType):
        try:
            converted = convert(text)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            kind = getattr(convert, "__name__", "value")
            why = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else f"not a valid {kind}"
            raise ConfigError(f"{source}: {key} {_short(text)}: {why}") from None
    else:
        converted = text
    if action.choices is not None and converted not in action.choices:
        raise ConfigError(f"{source}: {key} must be one of {', '.join(map(str, action.choices))}, "
                          f"not {_short(text)}")


def apply_config(command: str, argv: Sequence[str], parser: argparse.ArgumentParser, *,
                 environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> list[str]:
    """`argv` with the configured options in front, highest layer first among the configured ones."""
    environ = dict(os.environ if environ is None else environ)
    renamed.adopt_old_environment(environ)  # the old prefix still reads, with a warning
    options = _options_of(parser, command)
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
            env = label.endswith("*")
            source = label.replace("*", raw_key) if env else f"{label} {raw_key}"
            if key not in options:
                if own and key in _options_of(parser):
                    raise ConfigError(f"{source}: --{key} of mcp-tempest {command} is given on the command line only")
                if own:  # a command's own table or variable naming an option it lacks is a typo
                    raise _unknown(source, key, sorted(options), env=env,
                                   what=f"mcp-tempest {command} has no option --{key}")
                if not _serves_some_command(key):  # a shared key must serve some command
                    raise _unknown(source, key, _all_keys(), env=env,
                                   what=f"no mcp-tempest command has an option --{key}")
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
