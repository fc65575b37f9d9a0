"""Code coverage of a Python target under a campaign: which of the server's own lines and branches ran.

Why coverage.py and not a tracer of ours: its data files, its combining of many processes and
its HTML and Cobertura reports are what users already read and feed to their CI; measuring is
its job and fuzzing is ours.

Why in the server's processes and not in the harness: every fresh process the campaign starts
runs the target's code, so each must measure itself and leave a data file that `collect`
combines. How a process is measured depends on how it was started:

- spawned (`stdio:` without a fork server, `http+spawn:`): the command is run under
  `python -m coverage run --rcfile=PLAN` with the interpreter the target names (or the one in a
  console script's shebang). `coverage run` saves at a normal exit (stdin closed, the server
  returns); `sigterm = true` in the plan's rcfile makes it save on the harness's SIGTERM too.
- forked by the fork server (targets/fork_server.py): the zygote measures what it imports before
  any fork (module-level code the children will never run again) and saves that once; each child
  restarts the zygote's Coverage with a data file of its own (a unique suffix) and saves before it
  exits, or on SIGTERM. Nothing the zygote measured is in a child's file, so nothing is counted
  twice. Restarting costs a child under a millisecond where a new Coverage cost 10-150 ms.

A process ended by SIGKILL (it ignored both the closed stdin and SIGTERM) cannot save: its lines
are missing from the data. `CodeReach.processes` says how many data files were combined.

The plan reaches the processes as an environment variable (RC_VAR, the rcfile's path):
`targets.endpoints` sets it for a spec whose `coverage_rc` is set, `targets.processes.spawn`
wraps the command when the variable is in the child's environment, and the zygote reads it.
Without a plan nothing is wrapped and nothing changes.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import dataclasses
import functools
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from mcp_tempest.targets.processes import CODE_COVERAGE_VAR as RC_VAR
from mcp_tempest.targets.processes import COVERAGE_CONTEXT_VAR as CONTEXT_VAR
from mcp_tempest.targets.target_spec import TargetSpec

if TYPE_CHECKING:
    from mcp_tempest.targets.node_coverage import NodeCoveragePlan

DATA_NAME: Final = ".coverage"
RC_NAME: Final = "coveragerc"
MIN_COVERAGE: Final = "7.6"
_OWN_SECTION: Final = "mcp_tempest"
OWN_CONSOLE: Final = "mcp_tempest.fuzz.cli"  # what the harness's own console script imports: `mcp-tempest serve`
# Warnings a measured server must not print: its stderr is evidence the oracle reads, and these
# say nothing about the server (a process that ran none of the measured code is normal here).
_QUIET: Final = ("no-data-collected", "module-not-imported", "module-not-measured", "already-imported",
                 "include-ignored", "no-sysmon", "no-ctracer", "couldnt-parse", "module-not-python")
_PROBE_TIMEOUT: Final = 30.0

# Runs in the target's interpreter: can it import coverage, which Python is it, and where are the
# named modules (found, not imported, except for the parents of dotted names, as `-m` does too).
_PROBE: Final = r"""
import importlib.util, json, sys
out = {"python": list(sys.version_info[:2]), "coverage": "", "found": {}}
try:
    import coverage
    out["coverage"] = coverage.__version__
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is None:
        continue
    where = list(spec.submodule_search_locations or [])
    out["found"][name] = {"origin": spec.origin or "", "package": where[0] if where else ""}
print(json.dumps(out))
"""

Kind = Literal["script", "module", "console"]


@dataclass(frozen=True)
class PythonCommand:
    """A target command seen as a Python run: the interpreter, its own flags, and what it runs."""

    python: str
    flags: tuple[str, ...]
    kind: Kind
    what: str  # the script's path, the module's name, or the console script's path
    args: tuple[str, ...]
    imports: str = ""  # console scripts: the module their wrapper imports the entry point from

    def under_coverage(self, rcfile: str) -> list[str]:
        """The same run under `coverage run`: same interpreter, flags, program and arguments."""
        head = [self.python, *self.flags, "-m", "coverage", "run", f"--rcfile={rcfile}"]
        if self.kind == "module":
            return [*head, "-m", self.what, *self.args]
        return [*head, self.what, *self.args]


@dataclass(frozen=True)
class NotMeasured:
    """A target whose code cannot be measured; `reason` is the one line to show the user."""

    reason: str
    sources: tuple[str, ...] = ()  # the target's own code where it was found all the same (its literals)

    def to_json(self) -> dict[str, Any]:
        return {"measured": False, "reason": self.reason}


@dataclass(frozen=True)
class CoveragePlan:
    """What to measure for one target and where its data goes.

    `spec` is the target to run in place of the original (the same command and text, with
    `coverage_rc` set); `sources` are the files and folders whose coverage is reported."""

    spec: TargetSpec
    data_dir: Path
    rcfile: Path
    python: str
    core: str
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def teardown_seconds(self) -> float:
        """What a --duration campaign keeps for `collect` after its last job.

        The measured servers save as they end, which makes their ending no slower that could be
        measured; `collect` parses, analyses and renders every reported file, which grows with
        their number. Measured on a shared 2-core machine (load 6-10): 0.17-0.45 s for one file
        (tests/servers/sdk_server.py, 260 data files), 0.6-1.1 s for the reference server's 14
        files (100 data files); kept with a margin for a busier machine, as 0.5 s plus 0.1 s a file
        (4.0 s for any target before)."""
        files = 0
        for source in self.sources:
            path = Path(source)
            files += sum(1 for _ in path.rglob("*.py")) if path.is_dir() else 1
        return round(0.5 + 0.1 * files, 2)


@dataclass
class CodeReach:
    """What a campaign's processes ran of the measured code.

    `kind` says what is counted: "lines" (a Python target, coverage.py's lines and branches; each
    file has `lines`, `covered`, `branches`, `covered_branches`) or "functions" (a Node target,
    V8's coverage, `targets.node_coverage`; each file has `functions`, and the names in `reached`
    and `never_reached`). `data_file` is coverage.py's combined file, or the V8 data folder."""

    percent: float
    files: list[dict[str, Any]]
    processes: int
    data_file: Path
    html: Path | None = None
    xml: Path | None = None
    notes: list[str] = field(default_factory=list)
    kind: Literal["lines", "functions"] = "lines"
    # what each context (a property, or the surface search) ran: {"context", "lines", "only"}
    contexts: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "percent": self.percent, "files": self.files}
        if self.contexts:
            out["contexts"] = self.contexts
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def executed_lines(self, path: str | Path) -> set[int]:
        """Line numbers some measured process ran in `path` (empty when it ran none)."""
        from coverage import CoverageData

        data = CoverageData(basename=str(self.data_file))
        data.read()
        return set(data.lines(str(Path(path).resolve())) or ())

    def line(self) -> str:
        where = f"{len(self.files)} file" + ("" if len(self.files) == 1 else "s")
        what = "functions" if self.kind == "functions" else "lines and branches"
        return (f"code coverage: {self.percent:.1f}% of {what} in {where}, "
                f"from {self.processes} process data file" + ("" if self.processes == 1 else "s"))


def _not_measured(why: str) -> NotMeasured:
    return NotMeasured(f"code coverage: not measured for this target ({why})")


# --- what a command runs ---


def _is_python_name(name: str) -> bool:
    return bool(re.fullmatch(r"python(\d+(\.\d+)?)?", name))


@functools.lru_cache(maxsize=64)
def _shebang_python(path: str) -> str:
    """The interpreter a script file's first line names, if it is a Python; else "".

    Both forms installers write: `#!/path/python` (or via `env`) and, for long paths, pip's
    `#!/bin/sh` + `'''exec' "/path/python" "$0" "$@"` trampoline."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024).decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    if not head or not head[0].startswith("#!"):
        return ""
    words = head[0][2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if words and _is_python_name(Path(words[0]).name):
        return shutil.which(words[0]) or words[0]
    for line in head[1:4]:
        found = re.match(r"""'''exec' "?([^"\s]+)"?""", line)
        if found and _is_python_name(Path(found.group(1)).name):
            return found.group(1)
    return ""


@functools.lru_cache(maxsize=64)
def _console_module(path: str) -> str:
    """The module a console-script wrapper imports its entry point from ("" if none).

    Installers write `from pkg.mod import main` after importing only the standard library."""
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return ""
    for node in tree.body:
        names = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.partition(".")[0] not in sys.stdlib_module_names:
                return name
    return ""


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def python_command(argv: Sequence[str]) -> PythonCommand | None:
    """`argv` as a Python run (`python [flags] script.py`, `python [flags] -m mod`, or a console
    script whose shebang names a Python), else None."""
    if not argv:
        return None
    exe = shutil.which(argv[0]) or argv[0]
    if _is_python_name(Path(argv[0]).name):
        flags: list[str] = []
        i = 1
        # flags without a value only (-u, -B, -I, -E, -s, -O, ...): others change what runs
        while i < len(argv) and re.fullmatch(r"-[bBdEIiOqsSuvR]+", argv[i]):
            flags.append(argv[i])
            i += 1
        if i + 1 < len(argv) and argv[i] == "-m":
            return PythonCommand(exe, tuple(flags), "module", argv[i + 1], tuple(argv[i + 2 :]))
        if i < len(argv) and not argv[i].startswith("-") and Path(argv[i]).is_file():
            return PythonCommand(exe, tuple(flags), "script", argv[i], tuple(argv[i + 1 :]))
        return None
    if Path(exe).is_file():
        python = _shebang_python(exe)
        if python:
            return PythonCommand(python, (), "console", str(Path(exe).resolve()), tuple(argv[1:]),
                                 imports=_console_module(exe))
    return None


def measured(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """`argv` under coverage when `env` carries a plan (RC_VAR) and `argv` is a Python run; else
    `argv` unchanged. What `targets.processes.spawn` calls for every command it starts."""
    rcfile = env.get(RC_VAR, "")
    command = python_command(argv) if rcfile else None
    return command.under_coverage(rcfile) if command is not None else list(argv)


def process_env(rcfile: str | Path) -> dict[str, str]:
    """The variables a measured server process gets: the plan and the core coverage should use."""
    return {RC_VAR: str(rcfile), "COVERAGE_CORE": _rc_core(str(rcfile))}


@functools.lru_cache(maxsize=16)
def _rc_core(rcfile: str) -> str:
    parser = configparser.ConfigParser()
    parser.read(rcfile)
    return parser.get(_OWN_SECTION, "core", fallback="ctrace")


# --- planning ---


def _probe(python: str, names: Sequence[str]) -> dict[str, Any] | str:
    """Ask the target's interpreter; a dict, or why it could not be asked."""
    try:
        done = subprocess.run([python, "-c", _PROBE, *names], capture_output=True, timeout=_PROBE_TIMEOUT,
                              text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {python}: {exc}"
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return f"{python} did not answer ({tail})"
    return answer if isinstance(answer, dict) else f"{python} did not answer"


def _package_like(folder: Path) -> bool:
    return (folder / "__init__.py").is_file()


def _found_path(found: dict[str, str]) -> str:
    """A module found by the probe as what to measure: a package's folder, or a module's file (its
    folder when that is a package, as for a plain module inside one)."""
    if found.get("package"):
        return found["package"]
    origin = Path(found.get("origin") or "")
    if not origin.is_file():
        return ""
    return str(origin.parent) if _package_like(origin.parent) else str(origin)


def _version_at_least(version: str, floor: str) -> bool:
    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", text)[:3])
    return parts(version) >= parts(floor)


def plan_coverage(spec: TargetSpec, sources: Sequence[str],
                  data_dir: Path) -> CoveragePlan | NodeCoveragePlan | NotMeasured:
    """Decide what to measure for `spec` and write the rcfile its processes will read.

    By default the target's own code: a script (its folder when that is a package), the package
    of `-m`, or the package a console script imports. `sources` (paths, or module names found by
    the target's interpreter) are measured too. Data files left in `data_dir` by an earlier run
    are removed, so `collect` sees this run only."""
    if spec.kind == "http":
        return _not_measured(f"{spec.url} is a running endpoint; the harness starts none of its processes")
    from mcp_tempest.targets.node_coverage import plan_node_coverage

    node = plan_node_coverage(spec, sources, data_dir)  # node, or a script whose shebang is node
    if node is not None:
        return node
    command = python_command(spec.argv)
    if command is None:
        first = Path(spec.argv[0]).name if spec.argv else "?"
        return _not_measured(f"{first} is neither a Python nor a Node.js program")
    if command.kind == "console" and not command.imports:
        return _not_measured(f"cannot tell which package the console script {command.what} runs")
    own = command.what if command.kind == "module" else ""
    asked = _prefixes(command.imports) if command.kind == "console" else [own] if own else []
    extra_names = [s for s in sources if not Path(s).exists()]
    answer = _probe(command.python, [*asked, *extra_names])
    if isinstance(answer, str):
        return _not_measured(answer)
    if not answer.get("coverage"):
        why = answer.get("error", "no coverage module")
        return _not_measured(f"{command.python} cannot import coverage ({why}); install coverage>={MIN_COVERAGE} there")
    if not _version_at_least(answer["coverage"], MIN_COVERAGE):
        return _not_measured(f"{command.python} has coverage {answer['coverage']}; it needs coverage>={MIN_COVERAGE}")
    found: dict[str, dict[str, str]] = answer.get("found", {})
    notes: list[str] = []
    paths: list[str] = []
    if command.kind == "script":
        script = Path(command.what).resolve()
        paths.append(str(script.parent) if _package_like(script.parent) else str(script))
    elif command.kind == "console" and command.imports == OWN_CONSOLE:
        # `mcp-tempest serve`: the server is the reference (and its mutants), not the harness
        # the console script also holds (measuring all of it said "1% of the server's code")
        from mcp_tempest.targets import mutants, reference

        paths += [str(Path(m.__file__).parent) for m in (reference, mutants) if m.__file__]
    elif command.kind == "console":
        # its top-level package; below a namespace package (no __init__.py, shared by several
        # distributions), the outermost regular package on the way to the entry point's module
        regular = [n for n in asked if found.get(n, {}).get("origin", "").endswith("__init__.py")]
        own = regular[0] if regular else asked[0]
        where = _found_path(found.get(own, {}))
        if not where:
            return _not_measured(f"{command.python} cannot find the package {own!r} the console script imports")
        paths.append(where)
    else:
        where = _found_path(found.get(own, {}))
        if not where:
            return _not_measured(f"{command.python} cannot find the module {own!r}")
        paths.append(where)
    for source in sources:
        where = str(Path(source).resolve()) if Path(source).exists() else _found_path(found.get(source, {}))
        if where:
            paths.append(where)
        else:
            notes.append(f"--coverage-source {source}: neither a path nor a module {command.python} can find")
    paths = list(dict.fromkeys(paths))
    # sys.monitoring measures branches from Python 3.14 on; on 3.12 and 3.13 coverage.py itself would
    # refuse it with branch = true and fall back to the C tracer.
    core = "sysmon" if tuple(answer["python"]) >= (3, 14) else "ctrace"
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    for stale in data_dir.glob(DATA_NAME + "*"):
        with contextlib.suppress(OSError):
            stale.unlink()
    rcfile = data_dir / RC_NAME
    rcfile.write_text(_rc_text(data_dir / DATA_NAME, paths, core))
    _rc_core.cache_clear()
    measured_spec = dataclasses.replace(spec, coverage_rc=str(rcfile))
    return CoveragePlan(measured_spec, data_dir, rcfile, command.python, core, tuple(paths), tuple(notes))


def _rc_text(data_file: Path, paths: Sequence[str], core: str) -> str:
    """The plan as a coverage.py rcfile, which every measured process and `collect` read.

    Files are measured through their folder (`source` takes folders and packages only) and kept
    to themselves in the reports (`[report] include`)."""
    folders = list(dict.fromkeys(p if Path(p).is_dir() else str(Path(p).parent) for p in paths))
    include = [str(Path(p) / "*") if Path(p).is_dir() else p for p in paths]
    lines = ["# Written by mcp-tempest for one campaign (targets/code_coverage.py).", "[run]",
             "branch = true", "parallel = true", f"data_file = {data_file}", "sigterm = true",
             # the property that started the process: what each property contributed (contexts)
             f"context = ${{{CONTEXT_VAR}-}}",
             "source =", *(f"    {f}" for f in folders),
             "disable_warnings =", *(f"    {w}" for w in _QUIET),
             "[report]", "include =", *(f"    {i}" for i in include),
             "[html]", "title = mcp-tempest: code coverage of the target",
             # not a coverage.py section: the core is passed as COVERAGE_CORE (older releases lack `core`)
             f"[{_OWN_SECTION}]", f"core = {core}", ""]
    return "\n".join(lines)


# --- collecting ---


def collect(plan: CoveragePlan, out_dir: Path | None = None) -> CodeReach:
    """Combine the data files of every measured process and compute what they ran.

    With `out_dir`, coverage.py's HTML report goes to out_dir/coverage_html/ and its Cobertura
    XML to out_dir/coverage.xml. Calling it again combines what was added since. coverage.py's
    own warnings (a process killed mid-write leaves a data file it cannot read) are counted into
    `notes`, never printed: the harness's output is its own lines."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reach = _collect(plan, out_dir)
    unreadable = [w for w in caught if "data file" in str(w.message).lower()]
    if unreadable:
        reach.notes.append(f"{len(unreadable)} process data file(s) could not be read (a process ended mid-write)")
    return reach


def _share_file_reporters(cov: Any) -> None:
    """Parse each measured file once for the three reports (JSON, HTML, XML), not once per report.

    coverage.py makes a new FileReporter, which parses its file again, per file and per report:
    for the reference server's 14 files that was two thirds of `collect` (1.3 of 2 s). All three
    reports read the same combined data, so one reporter per file changes no number. A
    coverage.py without the hook is left as it is (slower, same numbers)."""
    make = getattr(cov, "_get_file_reporter", None)
    if make is None:
        return
    made: dict[Any, Any] = {}

    def shared(morf: Any) -> Any:
        key = morf if isinstance(morf, str) else id(morf)
        if key not in made:
            made[key] = make(morf)
        return made[key]

    cov._get_file_reporter = shared


def _summary(cov: Any) -> dict[str, Any]:
    """The totals and per-file summaries of coverage.py's JSON report (the same keys).

    Computed as that report computes them, from the same analyses summed the same way, but without
    what it adds per function and per class (a second parse of every file) and without writing and
    reading the JSON. A coverage.py without these pieces writes its JSON report after all."""
    try:
        from coverage.report_core import get_analysis_to_report
        from coverage.results import Numbers
    except ImportError:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "coverage.json"
            cov.json_report(outfile=str(path))
            return dict(json.loads(path.read_text()))

    def summary(numbers: Any) -> dict[str, Any]:
        return {"percent_covered": numbers.pc_covered, "num_statements": numbers.n_statements,
                "covered_lines": numbers.n_executed, "num_branches": numbers.n_branches,
                "covered_branches": numbers.n_executed_branches}

    total = Numbers(precision=cov.config.precision)
    files: dict[str, Any] = {}
    for reporter, analysis in get_analysis_to_report(cov, None):
        files[reporter.relative_filename()] = {"summary": summary(analysis.numbers)}
        total += analysis.numbers
    return {"totals": summary(total), "files": files}


#: The context of what ran with no property: the zygote's imports, the surface search before the jobs.
START_CONTEXT = "start-up and surface search"


def _by_context(data: Any, paths: Sequence[str]) -> list[dict[str, Any]]:
    """What each property contributed: the lines of the reported files its processes ran, and how
    many of those no other context ran. A process is credited to the property during which it was
    started (a warm process serving the next property too stays with the first; pools start the
    next process a little ahead), so the split is close, not exact; the total is exact."""
    roots = [Path(p).resolve() for p in paths]

    def reported(path: str) -> bool:  # the report's include: the plan's files and folders
        where = Path(path).resolve()
        return any(where == r or r in where.parents for r in roots)

    ran: dict[str, set[tuple[str, int]]] = {}
    for path in data.measured_files():
        if not reported(path):
            continue
        for line, contexts in (data.contexts_by_lineno(path) or {}).items():
            for context in contexts:
                name = context.strip("|") or START_CONTEXT
                ran.setdefault(name, set()).add((path, line))
    out = []
    for name, lines in ran.items():
        others = set().union(*(v for k, v in ran.items() if k != name)) if len(ran) > 1 else set()
        out.append({"context": name, "lines": len(lines), "only": len(lines - others)})
    return sorted(out, key=lambda c: (-c["only"], -c["lines"], c["context"]))


def _collect(plan: CoveragePlan, out_dir: Path | None) -> CodeReach:
    import coverage

    data_file = plan.data_dir / DATA_NAME
    parts = [p for p in plan.data_dir.glob(DATA_NAME + ".*") if p.is_file()]
    cov = coverage.Coverage(data_file=str(data_file), config_file=str(plan.rcfile), messages=False)
    _share_file_reporters(cov)
    cov.load()
    if parts:
        cov.combine(data_paths=[str(p) for p in parts], strict=False, keep=False)
        cov.save()
    reach = CodeReach(percent=0.0, files=[], processes=len(parts), data_file=data_file, notes=list(plan.notes))
    if not data_file.is_file() or not cov.get_data().measured_files():
        reach.notes.append("no measured process saved any data")
        return reach
    cov.set_option("report:ignore_errors", True)  # a file gone or not Python since it ran: left out
    try:
        summary = _summary(cov)
    except coverage.CoverageException as exc:  # nothing in the report's include
        reach.notes.append(f"no report: {exc}")
        return reach
    reach.percent = round(float(summary["totals"]["percent_covered"]), 2)
    for path, entry in sorted(summary["files"].items()):
        s = entry["summary"]
        reach.files.append({
            "path": path, "percent": round(float(s["percent_covered"]), 2),
            "lines": s["num_statements"], "covered": s["covered_lines"],
            "branches": s.get("num_branches", 0), "covered_branches": s.get("covered_branches", 0),
        })
    reach.contexts = _by_context(cov.get_data(), plan.sources)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        reach.html = out_dir / "coverage_html"
        reach.xml = out_dir / "coverage.xml"
        cov.html_report(directory=str(reach.html), ignore_errors=True)
        cov.xml_report(outfile=str(reach.xml), ignore_errors=True)
    return reach
