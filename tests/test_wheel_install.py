"""The package as a user installs it: a built wheel, not editable, in a fresh virtual environment,
used from a folder that has its own `fuzz/`, `load/`, `strategies/` and `targets/` packages.

Why: the editable install of the README and CI runs from the repository, where the project's own
folders are importable whatever the packaging says. A wheel that put generic top-level packages
into site-packages, missed a subpackage, or relied on an undeclared dependency passes every other
test and breaks on the first user's machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("fuzz", "load", "strategies", "targets")
pytestmark = pytest.mark.slow

# A user's own packages of the generic names: importing any of them instead of ours fails loudly.
SHADOW = 'raise ImportError("the user\'s own {name} package was imported instead of mcp_tempest.{name}")\n'


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = out.glob("mcp_tempest-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the wheel and what its metadata requires, from the package index."""
    home = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, timeout=300)
    done = subprocess.run([str(home / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return home


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user-project")
    for name in PACKAGE_DIRS:
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(SHADOW.format(name=name))
        (folder / name / "__main__.py").write_text(SHADOW.format(name=name))
    return folder


def _run(venv: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")
           and not k.startswith("MCP_TEMPEST_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_holds_one_package_and_every_module_of_the_tree(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"mcp_tempest", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}, tops
    expected = {f"mcp_tempest/{p.relative_to(ROOT).as_posix()}" for d in PACKAGE_DIRS for p in (ROOT / d).rglob("*.py")
                if "__pycache__" not in p.parts}
    assert expected - set(names) == set(), "modules missing from the wheel (a package not listed in pyproject.toml?)"
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    on_disk = {"mcp_tempest." + p.parent.relative_to(ROOT).as_posix().replace("/", ".")
               for d in PACKAGE_DIRS for p in (ROOT / d).rglob("__init__.py")}
    assert set(packages) == on_disk


def test_site_packages_gets_nothing_generic(venv: Path):
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert not [name for name in PACKAGE_DIRS if (site / name).exists()]
    assert (site / "mcp_tempest" / "fuzz" / "cli.py").is_file()


def test_every_module_imports_with_only_the_declared_dependencies(venv: Path, user_folder: Path):
    """In a venv holding nothing but the wheel's requirements, every module of the package imports:
    an undeclared dependency is a ModuleNotFoundError here (load's modules each in a process of
    their own: Locust monkey-patches the interpreter it is imported into)."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import mcp_tempest\n"
        "names = [m.name for m in pkgutil.walk_packages(mcp_tempest.__path__, 'mcp_tempest.')]\n"
        "bad = []\n"
        "for name in names:\n"
        "    if name.startswith('mcp_tempest.load') or name.endswith('__main__'):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        bad.append(f'{name}: {exc!r}')\n"
        "print(len(names)); print('\\n'.join(bad))\n"
    )
    done = _run(venv, user_folder, "python", "-c", script)
    assert done.returncode == 0 and done.stdout.strip().isdigit() and int(done.stdout) > 100, done.stdout + done.stderr
    loads = _run(venv, user_folder, "python", "-c",
                 "import importlib, pkgutil, mcp_tempest.load as l\n"
                 "for m in pkgutil.iter_modules(l.__path__, 'mcp_tempest.load.'):\n"
                 "    m.name.endswith('__main__') or importlib.import_module(m.name)\n")
    assert loads.returncode == 0, loads.stderr[-3000:]


def test_the_commands_work_beside_a_users_generic_packages(venv: Path, user_folder: Path, tmp_path: Path):
    """probe, a 20-example fuzz, a 3 s load, the pytest plugin: all on the embedded reference
    server, from a folder whose own `fuzz/`... packages would break any generic import."""
    probe = _run(venv, user_folder, "mcp-tempest", "probe")
    assert probe.returncode == 0, probe.stdout + probe.stderr
    fuzz = _run(venv, user_folder, "mcp-tempest", "fuzz", "--max-examples", "20", "--seed", "1", "--no-database",
                "--out", str(tmp_path / "fuzz"))
    assert fuzz.returncode == 0, fuzz.stdout[-2000:] + fuzz.stderr[-2000:]
    assert "0 findings" in fuzz.stdout.splitlines()[-1]
    load = _run(venv, user_folder, "mcp-tempest", "load", "--run-time", "3s", "--out", str(tmp_path / "load"))
    assert load.returncode == 0, load.stdout[-2000:] + load.stderr[-2000:]
    assert (tmp_path / "load" / "summary.json").is_file() or list((tmp_path / "load").rglob("summary.json"))
    plugin = _run(venv, user_folder, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:locust",
                  "--pyargs", "mcp_tempest.fuzz.properties.suite", "-k", "test_ids or test_valid",
                  "--hypothesis-seed", "1", timeout=600)
    assert plugin.returncode == 0, plugin.stdout[-3000:] + plugin.stderr[-2000:]
    assert " passed" in plugin.stdout.splitlines()[-1]
