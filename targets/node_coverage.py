"""Code coverage of a Node.js target under a campaign: which of the server's own functions ran.

Why V8's own coverage and not an instrumenting tool (c8, nyc, istanbul): `NODE_V8_COVERAGE` is
built into every Node since 10.12, needs nothing installed, costs little (V8 keeps the counters
anyway), and is inherited by every process the target spawns, wrappers and children alike. Its
JSON gives per script every function V8 compiled, with byte ranges and call counts, and block
ranges inside the functions that ran; this module reports at the level of functions (reached,
never reached, per file), which is what the issue asks of Node targets and what V8 reports
reliably. A function nested in one that never ran was never compiled, so V8 does not list it:
the never-reached lists name the outermost functions that never ran.

How the data reaches us: the plan's spec carries the V8 data folder in `coverage_rc` (a folder
named DATA_DIR; a Python plan's is an rcfile), `targets.endpoints.coverage_env` turns it into
`NODE_V8_COVERAGE=<folder>` for every process it starts, and `collect` parses what they left.

Why a preload: Node writes the data at a normal exit (stdin closed and nothing left to do,
`process.exit`) but not when it dies of a signal, and the harness ends a server that outlives its
closed stdin, and every `http+spawn:` instance, with SIGTERM. A server with no SIGTERM handler of
its own would lose everything. PRELOAD (run by `NODE_OPTIONS=--require`) writes the counters
(`v8.takeCoverage()`) on SIGTERM and, when no handler of the server's listens, dies of the same
signal again, so the exit status the oracle reads is unchanged. A process ended by SIGKILL still
writes nothing; `CodeReach.processes` counts the processes that wrote.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from mcp_tempest.targets.code_coverage import CodeReach
from mcp_tempest.targets.target_spec import TargetSpec

V8_VAR: Final = "NODE_V8_COVERAGE"
DATA_DIR: Final = "node-v8-coverage"
PRELOAD_NAME: Final = "mcp-tempest-v8-sigterm.cjs"
PRELOAD: Final = """\
'use strict';
// Written by mcp-tempest (targets/node_coverage.py): save this process's V8 coverage on SIGTERM.
const v8 = require('node:v8');
function mcpTempestSaveCoverage() {
  try { v8.takeCoverage(); } catch {}
  if (process.listenerCount('SIGTERM') > 1) return; // the server's own handler decides
  process.removeListener('SIGTERM', mcpTempestSaveCoverage);
  process.kill(process.pid, 'SIGTERM');
}
process.on('SIGTERM', mcpTempestSaveCoverage);
"""
# Node options whose value is the next word (`--require x`); `--opt=value` needs no special case.
_VALUED: Final = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "-C",
                            "--conditions", "--env-file", "--input-type", "--title", "--inspect-port"})
_NO_SCRIPT: Final = frozenset({"-e", "--eval", "-p", "--print", "-i", "--interactive"})
# Packages that run another package: their own code is never the server's.
_RUNNERS: Final = frozenset({"npm", "pnpm", "yarn", "corepack", "npx", "tsx", "ts-node"})
_FILE_NAME: Final = re.compile(r"coverage-(\d+)-\d+-\d+\.json")
_SCRIPT_START: Final = re.compile(r'\{"scriptId":"[^"]*","url":"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class NodeCommand:
    """A target command seen as a Node run: the node binary and the script it starts ("" for none)."""

    node: str
    entry: str


@dataclass(frozen=True)
class NodeCoveragePlan:
    """What to measure for one Node target and where V8 writes.

    `spec` is the target to run in place of the original (`coverage_rc` = `data_dir`). The
    server's own code is every file under `roots`, or, without roots, every file outside
    node_modules; `paths` and `packages` (from --coverage-source) are added."""

    spec: TargetSpec
    data_dir: Path
    preload: Path
    node: str
    entry: str
    roots: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def own(self, path: str) -> bool:
        """Whether `path` (a script V8 ran) is code this plan reports."""
        if path == str(self.preload):
            return False
        if any(_under(path, p) for p in self.paths):
            return True
        if any(f"/node_modules/{name}/" in path for name in self.packages):
            return True
        if self.roots:
            return any(_under(path, r) for r in self.roots)
        return "node_modules" not in Path(path).parts


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


# --- what a command runs ---


def _is_node_name(name: str) -> bool:
    return bool(re.fullmatch(r"node(js)?(\d+(\.\d+)*)?", name))


def _shebang_is_node(path: Path) -> bool:
    """Whether a script's first line runs node (`#!/usr/bin/node`, `#!/usr/bin/env node`, `env -S node ...`)."""
    try:
        with path.open("rb") as f:
            first = f.readline(512).decode("utf-8", "replace")
    except OSError:
        return False
    if not first.startswith("#!"):
        return False
    words = first[2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return bool(words) and _is_node_name(Path(words[0]).name)


def _without_env(argv: Sequence[str]) -> list[str]:
    """`env [-i] [VAR=value ...] cmd ...` as `cmd ...` (the variables reach node all the same)."""
    words = list(argv)
    if words and Path(words[0]).name == "env":
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0]):
            words = words[1:]
    return words


def node_command(argv: Sequence[str]) -> NodeCommand | None:
    """`argv` as a Node run (`node [options] script ...`, or a script whose shebang is node), else None."""
    words = _without_env(argv)
    if not words:
        return None
    exe = shutil.which(words[0]) or words[0]
    if _is_node_name(Path(words[0]).name):
        i = 1
        while i < len(words) and words[i].startswith("-"):
            if words[i] in _NO_SCRIPT:
                return NodeCommand(exe, "")
            if words[i] == "--":
                i += 1
                break
            i += 2 if words[i] in _VALUED else 1
        return NodeCommand(exe, words[i] if i < len(words) else "")
    if Path(exe).is_file() and _shebang_is_node(Path(exe)):
        return NodeCommand(shutil.which("node") or "node", exe)
    return None


def _package_root(entry: Path) -> Path | None:
    """The folder of the package `entry` belongs to, when that package is inside node_modules."""
    if "node_modules" not in entry.parts:
        return None
    for folder in entry.parents:
        if folder.name == "node_modules":
            return None
        if (folder / "package.json").is_file():
            return folder
    return None


def _package_name(root: Path) -> str:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return str(json.loads((root / "package.json").read_text()).get("name") or root.name)
    return root.name


# --- planning ---


def plan_node_coverage(spec: TargetSpec, sources: Sequence[str], data_dir: Path) -> NodeCoveragePlan | None:
    """A plan when `spec` starts node (None otherwise): V8 writes into data_dir/DATA_DIR.

    The server's own code: every file the processes ran outside node_modules, or, when the entry
    script is itself a package inside node_modules (`node node_modules/pkg/dist/index.js`, an npm
    bin link), that package. `sources` add paths, or npm package names (`@scope/pkg`) matched as
    `node_modules/<name>/` wherever it is installed. Data left by an earlier run is removed."""
    if spec.kind == "http":
        return None
    command = node_command(spec.argv)
    if command is None:
        return None
    notes: list[str] = []
    roots: list[str] = []
    if command.entry:
        entry = Path(command.entry).resolve()
        root = _package_root(entry)
        if root is not None and _package_name(root).lstrip("@").split("/")[-1] in _RUNNERS:
            notes.append(f"{command.entry} runs another package: name the server's with --coverage-source")
        elif root is not None:
            roots.append(str(root))
    paths = [str(Path(s).resolve()) for s in sources if Path(s).exists()]
    packages = [s for s in sources if not Path(s).exists()]
    if os.environ.get(V8_VAR):
        notes.append(f"{V8_VAR} was set; the target's processes write to the campaign's folder instead")
    base = Path(data_dir).resolve()
    v8_dir = base / DATA_DIR
    shutil.rmtree(v8_dir, ignore_errors=True)
    v8_dir.mkdir(parents=True, exist_ok=True)
    preload = base / PRELOAD_NAME
    preload.write_text(PRELOAD)
    measured_spec = dataclasses.replace(spec, coverage_rc=str(v8_dir))
    return NodeCoveragePlan(measured_spec, v8_dir, preload, command.node, command.entry, tuple(roots),
                            tuple(paths), tuple(packages), tuple(notes))


def node_env(handle: str, base: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The variables a measured Node server gets, when `handle` (a spec's `coverage_rc`) is a V8
    data folder of a plan; None when it is not (a Python plan's rcfile, or nothing)."""
    if not handle or Path(handle).name != DATA_DIR or not Path(handle).is_dir():
        return None
    preload = Path(handle).parent / PRELOAD_NAME
    options = (base if base is not None else os.environ).get("NODE_OPTIONS", "")
    require = f"--require {json.dumps(str(preload))}" if " " in str(preload) else f"--require {preload}"
    return {V8_VAR: handle, "NODE_OPTIONS": f"{options} {require}".strip()}


# --- collecting ---


def _line_of(text: str | None, offset: int) -> int:
    """The 1-based line of a V8 offset (UTF-16 code units into the script's source)."""
    if text is None:
        return 0
    if text.isascii():
        return text.count("\n", 0, offset) + 1
    units = text.encode("utf-16-le")[: offset * 2].decode("utf-16-le", "replace")
    return units.count("\n") + 1


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def collect_node(plan: NodeCoveragePlan) -> CodeReach:
    """Merge what every Node process wrote: a function is reached when any process called it.

    Functions are keyed by their byte range in the script, so the same function seen by many
    processes (or only compiled in some) is counted once. The module's top-level code is not a
    function and is left out."""
    found: dict[str, dict[tuple[int, int], list[Any]]] = {}
    pids: set[str] = set()
    unreadable = 0
    for data_file in sorted(plan.data_dir.glob("coverage-*.json")):
        try:
            for script in _own_scripts(plan, data_file.read_bytes().decode("utf-8")):
                _merge(plan, script, found)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            unreadable += 1
            continue
        name = _FILE_NAME.fullmatch(data_file.name)
        pids.add(name.group(1) if name else data_file.name)
    reach = CodeReach(percent=0.0, files=[], processes=len(pids), data_file=plan.data_dir, kind="functions",
                      notes=list(plan.notes))
    if unreadable:
        reach.notes.append(f"{unreadable} V8 coverage file(s) could not be read (a process ended mid-write)")
    if not pids:
        reach.notes.append("no Node process wrote V8 coverage (node older than 10.12, or every process was killed)")
        return reach
    if not found:
        what = "the server's own code" if not (plan.paths or plan.packages) else "the measured code"
        reach.notes.append(f"no file of {what} ran; name it with --coverage-source")
    total = hit = 0
    for path in sorted(found):
        text = _read(path)
        reached: list[str] = []
        never: list[str] = []
        for (start, _end), (name, ran) in sorted(found[path].items()):
            label = f"{name or '(anonymous)'} (line {_line_of(text, start)})"
            (reached if ran else never).append(label)
        functions = len(reached) + len(never)
        total += functions
        hit += len(reached)
        reach.files.append({"path": path, "percent": _percent(len(reached), functions), "functions": functions,
                            "reached": reached, "never_reached": never})
    reach.percent = _percent(hit, total)
    for source in plan.packages:
        if not any(f"/node_modules/{source}/" in f["path"] for f in reach.files):
            reach.notes.append(f"--coverage-source {source}: no file of it ran (not a path, nor an installed package)")
    return reach


def _own_scripts(plan: NodeCoveragePlan, text: str) -> list[dict[str, Any]]:
    """The scripts of one process's data that `plan` reports, parsed alone.

    Why not json.loads of the whole file: it lists every script the process ran (node's own,
    node_modules), most of a megabyte per process, and parsing all of it was most of the cost.
    V8 writes each script as `{"scriptId":..,"url":..,"functions":..}`: the urls are found with a
    scan and only the own scripts are decoded. A file in another shape is parsed whole."""
    starts = list(_SCRIPT_START.finditer(text))
    if not starts:
        scripts = json.loads(text)["result"]
        return [s for s in scripts if (p := _file_path(str(s.get("url", "")))) is not None and plan.own(p)]
    decoder = json.JSONDecoder()
    out = []
    for match in starts:
        raw = match.group(1)
        path = _file_path(json.loads(f'"{raw}"') if "\\" in raw else raw)
        if path is not None and plan.own(path):
            out.append(decoder.raw_decode(text, match.start())[0])
    return out


def _file_path(url: str) -> str | None:
    return unquote(urlparse(url).path) if url.startswith("file:") else None


def _merge(plan: NodeCoveragePlan, script: dict[str, Any], found: dict[str, dict[tuple[int, int], list[Any]]]) -> None:
    """One script of one process's data into `found`: path -> (start, end) -> [name, reached]."""
    path = _file_path(str(script.get("url", "")))
    if path is None or not plan.own(path):
        return
    functions = found.setdefault(path, {})
    for fn in script.get("functions", []):
        ranges = fn.get("ranges") or []
        if not ranges:
            continue
        start, end, count = int(ranges[0]["startOffset"]), int(ranges[0]["endOffset"]), int(ranges[0]["count"])
        name = str(fn.get("functionName") or "")
        if start == 0 and not name:
            continue  # the module's top level (or CommonJS's wrapper), not a function of the file
        seen = functions.setdefault((start, end), [name, False])
        seen[1] = seen[1] or count > 0


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 100.0

