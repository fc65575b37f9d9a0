"""What the project was called before it was mcp-tempest, and how old inputs are read today.

The project was published as mcp-gauntlet (the PyPI name of that spelling belongs to another tool)
with four top-level packages, `fuzz`, `load`, `strategies` and `targets`. Users have configs,
CI environments and reproduction files written in that vocabulary; for one release they keep
working, each old spelling read through this one table with a one-line warning, so that moving
over is a search and replace rather than a broken nightly job. Nothing else in the project names
the old spellings.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, MutableMapping
from typing import Any, Final

OLD_NAME: Final = "mcp-gauntlet"
NEW_NAME: Final = "mcp-tempest"
OLD_ENV_PREFIX: Final = "MCP_GAUNTLET_"
NEW_ENV_PREFIX: Final = "MCP_TEMPEST_"
OLD_TABLE: Final = OLD_NAME  # [tool.mcp-gauntlet] in pyproject.toml
#: Reproduction and client-case file formats written under the old name, and what they are now.
FORMATS: Final[dict[str, str]] = {
    "mcp-gauntlet/repro-1": "mcp-tempest/repro-1",
    "mcp-gauntlet/client-case-1": "mcp-tempest/client-case-1",
}
#: The old top-level packages, now subpackages of one namespace.
PACKAGE: Final = "mcp_tempest"
OLD_PACKAGES: Final = ("fuzz", "load", "strategies", "targets")

_MODULE_FLAG = re.compile(r"(?<![\w.-])-m(\s+)((?:" + "|".join(OLD_PACKAGES) + r")(?:\.[A-Za-z_]\w*)*)(?![\w.])")
_announced: set[str] = set()


def deprecated(old: str, new: str, warn: Callable[[str], None] | None = None) -> None:
    """One line on stderr per old spelling and process: enough to be seen in a CI log, never a flood."""
    if old in _announced:
        return
    _announced.add(old)
    line = f"{NEW_NAME}: {old} is deprecated, use {new} (the old spelling stops working in the next release)"
    (warn or (lambda text: print(text, file=sys.stderr)))(line)


def adopt_old_environment(environ: MutableMapping[str, str], warn: Callable[[str], None] | None = None) -> None:
    """Give every MCP_GAUNTLET_X its MCP_TEMPEST_X (a new spelling already set wins), so that the
    rest of the harness, and the servers it starts, read only the new names."""
    for key in [k for k in environ if k.startswith(OLD_ENV_PREFIX)]:
        new = NEW_ENV_PREFIX + key[len(OLD_ENV_PREFIX):]
        if new not in environ:
            environ[new] = environ[key]
        deprecated(key, new, warn)


def module_command(text: str) -> str:
    """A command line naming an old module (`python -m targets.reference`) with today's path."""
    return _MODULE_FLAG.sub(lambda m: f"-m{m.group(1)}{PACKAGE}.{m.group(2)}", text)


def _module_argv(argv: list[Any]) -> list[Any]:
    out = list(argv)
    for i in range(len(out) - 1):
        if out[i] == "-m" and isinstance(out[i + 1], str) and out[i + 1].split(".")[0] in OLD_PACKAGES:
            out[i + 1] = f"{PACKAGE}.{out[i + 1]}"
    return out


def upgrade_document(doc: dict[str, Any]) -> dict[str, Any]:
    """A reproduction file as today's layout writes it: its format and every command it records
    (the target, the transcript's target, the command line) moved to the `mcp_tempest` modules.
    A file already in today's layout comes back unchanged."""
    fmt = doc.get("format")
    if fmt not in FORMATS:
        return doc
    doc = {**doc, "format": FORMATS[fmt]}
    if isinstance(doc.get("target"), str):
        doc["target"] = module_command(doc["target"])
    if isinstance(doc.get("command"), list):
        doc["command"] = _module_argv(doc["command"])
    elif isinstance(doc.get("command"), str):
        doc["command"] = module_command(doc["command"])
    transcript = doc.get("transcript")
    if isinstance(transcript, dict) and isinstance(transcript.get("target"), str):
        doc["transcript"] = {**transcript, "target": module_command(transcript["target"])}
    case = doc.get("case")
    if isinstance(case, dict) and case.get("format") in FORMATS:
        doc["case"] = {**case, "format": FORMATS[case["format"]]}
    return doc

