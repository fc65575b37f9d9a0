"""Dependencies are ranges, each one used, each lower bound the one CI installs.

mcp-tempest installs into its users' test environments, so its requirements are theirs: a pin
would fight their Hypothesis, an unused package is weight they carry, and a lower bound nobody ran
is a promise nobody kept (.ci/lowest.sh runs the fast suite on .ci/constraints-lowest.txt).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIRS = ("fuzz", "load", "strategies", "targets")
# Distribution name -> the module it is imported as, where the two differ.
IMPORT_NAME = {"mcp-types": "mcp_types", "hypothesis-jsonschema": "hypothesis_jsonschema"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _runtime() -> list[Requirement]:
    return [Requirement(r) for r in _project()["dependencies"]]


def _runtime_source() -> str:
    return "\n".join(p.read_text() for d in RUNTIME_DIRS for p in (ROOT / d).rglob("*.py"))


def test_no_runtime_dependency_is_pinned_and_none_caps_hypothesis():
    for req in _runtime():
        assert not any(s.operator in ("==", "===", "~=") for s in req.specifier), f"{req} is a pin"
        assert any(s.operator == ">=" for s in req.specifier), f"{req} has no tested lower bound"
    hyp = next(r for r in _runtime() if r.name == "hypothesis")
    assert Version("6.170.17") in hyp.specifier and Version("6.999.0") in hyp.specifier


@pytest.mark.parametrize("req", _runtime(), ids=lambda r: r.name)
def test_every_runtime_dependency_is_imported_by_runtime_code(req: Requirement):
    module = IMPORT_NAME.get(req.name, req.name.replace("-", "_"))
    pattern = rf"^\s*(import {module}\b|from {module}(\.| import))"
    assert re.search(pattern, _runtime_source(), re.M), f"{req.name} is declared but no runtime module imports it"


def test_the_lowest_constraints_are_exactly_the_declared_lower_bounds():
    lowest = {}
    for line in (ROOT / ".ci" / "constraints-lowest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, ver = line.partition("==")
            lowest[name.strip()] = ver.strip()
    declared = list(_runtime())
    for extra, reqs in _project()["optional-dependencies"].items():
        if extra != "test":
            declared += [Requirement(r) for r in reqs]
    for req in declared:
        low = next((s.version for s in req.specifier if s.operator == ">="), None)
        if req.name in lowest and low is not None:
            assert Version(lowest[req.name]) == Version(low), f"{req}: constraints-lowest has {lowest[req.name]}"
    missing = {r.name for r in _runtime()} - set(lowest)
    assert not missing, f"lower bounds not tested by .ci/constraints-lowest.txt: {missing}"


def _dry_run_installs(tmp_path: Path, env: dict[str, str] | None = None, extras: str = "") -> dict[str, str]:
    """What pip would install (name -> version) to add this project (with `extras`, e.g. "[hjs]")
    to the running environment."""
    import os

    import orjson

    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report), f"{ROOT}{extras}"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in orjson.loads(report.read_bytes())["install"]}


@pytest.mark.slow
def test_installing_mcp_tempest_keeps_the_hypothesis_already_there(tmp_path: Path):
    """The resolver, asked to install us beside the Hypothesis in this environment, leaves it alone
    (on .venv-lowest that is 6.140.2, which the old `==6.170.17` pin replaced)."""
    import hypothesis

    installs = _dry_run_installs(tmp_path)
    assert "hypothesis" not in installs, f"pip would replace Hypothesis {hypothesis.__version__} with {installs['hypothesis']}"


@pytest.mark.slow
@pytest.mark.parametrize("extras", ["", "[hjs,hypofuzz]"], ids=["plain", "with-extras"])
def test_installing_mcp_tempest_keeps_a_newer_hypothesis_than_the_old_pin(tmp_path: Path, extras: str):
    """A user's environment with a Hypothesis newer than any we have run (6.999.0: the index has
    none newer than the old pin 6.170.17, so its metadata is put first on sys.path, which is where
    pip looks for installed distributions) keeps it: no pin or cap on Hypothesis makes pip swap it,
    the hjs and hypofuzz extras included (they once capped it at 6.170.10 and 6.157.1)."""
    site = tmp_path / "site"
    info = site / "hypothesis-6.999.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hypothesis\nVersion: 6.999.0\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")
    installs = _dry_run_installs(tmp_path, env={"PYTHONPATH": str(site)}, extras=extras)
    assert "hypothesis" not in installs, f"pip would replace Hypothesis 6.999.0 with {installs['hypothesis']}"


def _installed_package_files() -> list[Path]:
    """Every source file of the installed `mcp_tempest` (the editable install's folders here, the
    wheel's in site-packages in tests/test_wheel_install.py): what a user's import can reach."""
    import importlib.util

    files: list[Path] = []
    for sub in ("fuzz", "load", "strategies", "targets"):
        spec = importlib.util.find_spec(f"mcp_tempest.{sub}")
        assert spec is not None and spec.submodule_search_locations, f"mcp_tempest.{sub} is not installed"
        for location in spec.submodule_search_locations:
            files += sorted(Path(location).rglob("*.py"))
    return files


def imported_distributions(files: list[Path]) -> dict[str, set[str]]:
    """Top-level module -> the files importing it, for every import outside the standard library
    and our own namespace, at any depth (an import inside a function is still a dependency)."""
    import ast

    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "mcp_tempest":
                    found.setdefault(top, set()).add(path.name)
    return found


def _declared_names() -> set[str]:
    """Distributions the package may import: the runtime requirements and the user-facing extras."""
    declared = {r.name for r in _runtime()}
    for extra, reqs in _project()["optional-dependencies"].items():
        if extra != "test":
            declared |= {Requirement(r).name for r in reqs}
    return {_canonical(n) for n in declared}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_module_the_installed_package_imports_is_a_declared_requirement():
    """The whole import graph of the installed package: a module that arrives only because some
    other package happens to require it today (gevent through Locust, referencing through
    jsonschema) is undeclared, and fails here before it fails a user whose resolver chose otherwise."""
    from importlib.metadata import packages_distributions

    by_module = packages_distributions()
    reverse = {v: k for k, v in IMPORT_NAME.items()}
    declared = _declared_names()
    undeclared = {}
    for module, where in imported_distributions(_installed_package_files()).items():
        dists = by_module.get(module) or [reverse.get(module, module)]
        if not any(_canonical(d) in declared for d in dists):
            undeclared[module] = f"{'/'.join(dists)} (imported by {', '.join(sorted(where)[:3])})"
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_the_import_graph_check_sees_an_undeclared_import(tmp_path: Path):
    (tmp_path / "late.py").write_text("def f():\n    import gevent.socket\n    from referencing import Registry\n"
                                      "    import os, orjson\n    from mcp_tempest.fuzz import cli\n")
    assert set(imported_distributions([tmp_path / "late.py"])) == {"gevent", "referencing", "orjson"}
