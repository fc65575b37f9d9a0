"""The dependency directions of ARCHITECTURE.md, checked on the source (every import, also the
ones inside functions): `targets` imports nothing from `fuzz` or `load`, and nothing under `fuzz`
imports `locust`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(package: Path) -> dict[str, set[str]]:
    """Every module named by an import statement in `package`, per file (relative path)."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(package.parent))] = names
    return found


def offending(package: Path, forbidden: tuple[str, ...]) -> list[str]:
    """`file: module` for each import of a forbidden top-level package (or a module under it)."""
    bad = []
    for file, names in imported_modules(package).items():
        for name in sorted(names):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{file}: {name}")
    return bad


def test_targets_imports_nothing_from_fuzz_or_load() -> None:
    assert offending(ROOT / "targets", ("mcp_tempest.fuzz", "mcp_tempest.load")) == []


def test_nothing_under_fuzz_imports_locust() -> None:
    assert offending(ROOT / "fuzz", ("locust",)) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "targets"
    pkg.mkdir()
    (pkg / "ok.py").write_text("from mcp_tempest.targets import wire\nimport mcp_tempest.fuzzy\n")
    (pkg / "late.py").write_text("def f():\n    from mcp_tempest.fuzz.properties.executor import Run\n"
                                 "    import mcp_tempest.load.runner\n")
    assert offending(pkg, ("mcp_tempest.fuzz", "mcp_tempest.load")) == [
        "targets/late.py: mcp_tempest.fuzz.properties.executor.Run", "targets/late.py: mcp_tempest.load.runner"]
