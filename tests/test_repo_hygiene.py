"""The checkout stays clean for users: no developer-machine paths in docs, README outputs ignored."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_docstrings_name_no_absolute_interpreter():
    for path in (ROOT / "tests" / "benchmarks").glob("*.py"):
        doc = path.read_text().split('"""')[1] if '"""' in path.read_text() else ""
        assert not re.search(r"(^|\s)/\S*/python3?\b", doc), f"{path.name}: run it with `python`, not a path"


def test_readme_example_output_folders_are_ignored(tmp_path: Path):
    for folder in ("nightly", "tempest-report", ".tempest-db", "tempest-out", ".venv-lowest"):
        probe = f"{folder}/x.json"
        proc = subprocess.run(["git", "check-ignore", "-q", probe], cwd=ROOT, capture_output=True)
        assert proc.returncode == 0, f"{folder}/ is not in .gitignore"
