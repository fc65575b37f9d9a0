"""Benchmark: valid frames per second, our compiler next to hypothesis-jsonschema, same schemas.

Why this exists: strategies/compiler.py is ours instead of hypothesis-jsonschema because 0.23.1
cannot resolve recursive `$ref` (and runs on Hypothesis >= 6.170.10 only through
strategies/hjs_inputs.adapt_hjs). This script shows the other half of the argument by
measurement: on the very same schemas, run hypothesis-jsonschema under a Hypothesis it works
with unaided (installed into a throwaway venv under /tmp from PyPI), so the adapter is not what
is timed, and compare throughput.

What is measured, per method of 2026-07-28 and for a few tool inputSchemas:
- ours/frame: `valid_request(method)` (the frames the fuzzer sends, `_meta` pinned);
- ours/schema: our compiler on the exact official request schema (errata applied);
- hjs/exact: hypothesis-jsonschema on that exact schema (it fails: recursive $ref);
- hjs/unrolled: hypothesis-jsonschema on the same schema with its recursive $refs unrolled
  to the depth our compiler uses (what it needs to run at all) -> frames/s and the ratio.
And both paths for tool inputSchemas with `not`, `if`/`then`/`else`, `dependentRequired`,
`pattern` (strategies/hjs_inputs.py; the schemas of tests/test_strategies_hjs.py): valid
arguments per CPU-second from `tool_arguments` on this Hypothesis (our compiler plus the validity
filter: the path on the newest Hypothesis) and from hypothesis-jsonschema plus the same filter
(the path with the `hjs` extra) -> the second ratio in the summary line.
Throughput is frames per CPU-second of the generating process, one frame per Hypothesis
example (how properties use them), generate phase only, each measurement capped by a CPU
budget: other load on the machine distorts CPU time less than wall time, and
hypothesis-jsonschema on these schemas needs the cap (seconds per frame).

Where a tools/call frame's CPU time goes (`--no-hjs` skips hypothesis-jsonschema and prints only
this and our rates): the share spent inside the frame strategy's draw (our combinators plus the
Hypothesis draw primitives they call) against the rest (Hypothesis' engine per example: the
choice tree, its mutation of earlier examples, ConjectureData bookkeeping), and in the same run
the engine's rate for a one-integer example, the ceiling no strategy can beat on this machine.
Our own code is about 1% of the self time in a cProfile of the frames (strategies/compiler.py's
`record`); everything else is Hypothesis, so what is left to gain is fewer Hypothesis draws per
frame (a nested `record` is filled inline, traceparent is one draw) or fewer examples per frame.

Run:  python tests/benchmarks/bench_strategies.py [--frames N] [--venv DIR] [--no-hjs]
Ends with one summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
SPEC_SCHEMA = PROJECT.parent / "shared" / "spec" / "2026-07-28" / "schema.json"
sys.path.insert(0, str(PROJECT))

HJS_REQUIREMENTS = ["hypothesis<6.170.10", "hypothesis-jsonschema==0.23.1"]

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "tool:weather": {
        "type": "object",
        "properties": {
            "location": {"type": "string", "minLength": 1},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        "required": ["location"],
        "additionalProperties": False,
    },
    "tool:search": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "filters": {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                    "after": {"type": "string", "format": "date"},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                },
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        "required": ["query"],
    },
    "tool:record": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z]{2}-[0-9]{4}$"},
            "fields": {"type": "object", "additionalProperties": {"type": ["string", "integer", "boolean"]}},
            "mode": {"oneOf": [{"const": "create"}, {"const": "update"}]},
        },
        "required": ["id", "mode"],
    },
}

# Runs one schema in the throwaway venv; prints one JSON line per example so that the parent
# can stop it at the CPU budget and still know how far it got.
HJS_RUNNER = textwrap.dedent(
    """
    import json, os, sys, time
    from hypothesis import HealthCheck, Phase, given, settings
    import hypothesis
    from hypothesis_jsonschema import from_schema

    schema = json.load(open(sys.argv[1]))
    frames, budget = int(sys.argv[2]), float(sys.argv[3])
    only_valid = len(sys.argv) > 4  # what strategies/hjs_inputs.only_valid does to hjs' output
    start = time.process_time()
    count = 0

    def report(**extra):
        spent = time.process_time() - start
        line = {"hypothesis": hypothesis.__version__, "frames": count, "cpu_s": spent,
                "rate": count / spent if spent else 0.0, **extra}
        print(json.dumps(line), flush=True)

    try:
        strategy = from_schema(schema)
        if only_valid:
            from jsonschema import Draft202012Validator
            strategy = strategy.filter(Draft202012Validator(schema).is_valid)

        @settings(max_examples=frames, database=None, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(strategy)
        def run(frame):
            global count
            count += 1
            report()
            if time.process_time() - start > budget:
                os._exit(0)

        run()
        report(done=True)
    except Exception as exc:
        report(error=type(exc).__name__ + ": " + (str(exc).splitlines() or [""])[0][:120])
    """
)


def ensure_venv(venv: Path) -> Path:
    """A throwaway venv with hypothesis-jsonschema and a Hypothesis old enough for it."""
    python = venv / "bin" / "python"
    marker = venv / ".tempest-ready"
    if marker.is_file() and python.is_file():
        return python
    print(f"creating {venv} with {' '.join(HJS_REQUIREMENTS)} (PyPI)...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *HJS_REQUIREMENTS], check=True, timeout=900
    )
    marker.write_text("ok\n")
    return python


def hjs_python(venv: Path) -> tuple[Path | None, str]:
    """The throwaway venv's python, or None and why not (no network, no matching Hypothesis...)."""
    try:
        return ensure_venv(venv), ""
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"hypothesis-jsonschema unavailable ({type(exc).__name__}: {str(exc)[:100]})"


def draw_share(strategy: Any, frames: int, budget: float) -> dict[str, Any]:
    """Frames per CPU-second and the part of that CPU time spent inside the strategy's draw.

    The rest is Hypothesis' engine per example (choice tree, mutation of earlier examples, test
    execution bookkeeping): no strategy change reaches it except drawing fewer choices.
    """
    from hypothesis import strategies as st

    inside = [0.0]

    @st.composite
    def timed(draw: Any) -> Any:
        start = time.process_time()
        value = draw(strategy)
        inside[0] += time.process_time() - start
        return value

    got = measure_ours(timed(), frames, budget)
    got["draw_share"] = inside[0] / got["cpu_s"] if got["cpu_s"] else 0.0
    return got


def unroll(doc: dict[str, Any], depth: int) -> Any:
    """Inline every $ref; a ref met more than `depth` times on one path becomes `false`.

    That is exactly how our compiler bounds recursion, so both generators see the same
    language of values (hypothesis-jsonschema cannot resolve the recursive original).
    """
    defs = doc["$defs"]

    def walk(node: Any, counts: dict[str, int]) -> Any:
        if isinstance(node, list):
            return [walk(x, counts) for x in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            if counts.get(name, 0) >= depth:
                return False
            inner = walk(defs[name], {**counts, name: counts.get(name, 0) + 1})
            rest = {k: walk(v, counts) for k, v in node.items() if k != "$ref"}
            return {"allOf": [inner, rest]} if rest else inner
        return {k: (v if k in ("const", "enum", "default", "examples") else walk(v, counts)) for k, v in node.items()}

    return walk({k: v for k, v in doc.items() if k != "$defs"}, {})


def run_hjs(python: Path, runner: Path, schema_file: Path, frames: int, budget: float,
            only_valid: bool = False) -> dict[str, Any]:
    """Run one schema under hypothesis-jsonschema; stop it at the budget; the last progress line."""
    proc = subprocess.Popen(
        [str(python), str(runner), str(schema_file), str(frames), str(budget), *(["valid"] if only_valid else [])],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    last: dict[str, Any] = {"frames": 0, "rate": 0.0, "error": "no output"}
    deadline = time.monotonic() + budget * 4 + 60  # wall clock: the machine may be busy
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            last = json.loads(line)
            if time.monotonic() > deadline:
                break
    finally:
        if proc.poll() is None:
            proc.kill()  # our own child, by handle
        proc.wait(timeout=30)
    return last


def measure_ours(strategy: Any, frames: int, budget: float) -> dict[str, Any]:
    from hypothesis import HealthCheck, Phase, given, settings

    got: list[Any] = []
    start = time.process_time()

    @settings(
        max_examples=frames,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(frame: Any) -> None:
        got.append(frame)
        if time.process_time() - start > budget:
            raise TimeoutError

    try:
        run()
    except TimeoutError:
        pass
    spent = time.process_time() - start
    return {"frames": len(got), "cpu_s": spent, "rate": len(got) / spent if spent else 0.0}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=500, help="frames per measurement (default 500)")
    parser.add_argument("--budget", type=float, default=15.0, help="CPU seconds cap per measurement")
    parser.add_argument("--venv", default=os.path.join(tempfile.gettempdir(), "tempest-hjs-venv"))
    parser.add_argument("--no-hjs", action="store_true", help="skip hypothesis-jsonschema (our numbers only)")
    args = parser.parse_args(argv)
    if not SPEC_SCHEMA.is_file():
        print(f"bench_strategies: {SPEC_SCHEMA} not found (the official schema is needed for the same-schema comparison)")
        return 2

    from hypothesis import __version__ as hyp_version

    from mcp_tempest.strategies.compiler import SchemaCompiler
    from mcp_tempest.strategies.frames import valid_notification, valid_request
    from mcp_tempest.strategies.schema_source import load_schema_source

    official = load_schema_source(SPEC_SCHEMA)
    depth = official.compiler.limits.max_ref_depth
    names = [*official.requests, "notifications/cancelled"]
    cases: dict[str, dict[str, Any]] = {}
    ours: dict[str, dict[str, Any]] = {}
    for name in names:
        def_name = official.requests.get(name) or official.notifications[name]
        exact = official.schema(def_name)
        cases[name] = {"exact": exact, "unrolled": unroll(exact, depth)}
        frame = valid_request(name, schema_source=official) if name in official.requests else valid_notification(schema_source=official)
        ours[name] = {
            "frame": measure_ours(frame, args.frames, args.budget),
            "schema": measure_ours(SchemaCompiler(exact).strategy(), args.frames, args.budget),
        }
        print(f"  ours {name:26} frame {ours[name]['frame']['rate']:7.0f}/s  schema {ours[name]['schema']['rate']:7.0f}/s", flush=True)
    for name, schema in TOOL_SCHEMAS.items():
        cases[name] = {"exact": schema, "unrolled": schema}
        rate = measure_ours(SchemaCompiler(schema).strategy(), args.frames, args.budget)
        ours[name] = {"frame": rate, "schema": rate}
        print(f"  ours {name:26} arguments {rate['rate']:7.0f}/s", flush=True)
    from mcp_tempest.strategies.targeted import tool_arguments
    from tests.test_strategies_hjs import HARD_SCHEMAS

    hard_ours = {}
    for name, schema in HARD_SCHEMAS.items():
        hard_ours[name] = measure_ours(tool_arguments({"name": name, "inputSchema": schema})[0], args.frames, args.budget)
        print(f"  ours hard:{name:21} arguments {hard_ours[name]['rate']:7.0f}/s", flush=True)

    from hypothesis import strategies as st

    from mcp_tempest.strategies.targeted import targeted_request, tools_from_schemas

    targeted = targeted_request(tools_from_schemas(TOOL_SCHEMAS.items()), schema_source=official,
                                include_unknown=False, include_lists=False)
    split = draw_share(valid_request("tools/call", schema_source=official), args.frames, args.budget)
    split_targeted = draw_share(targeted, args.frames, args.budget)
    floor = measure_ours(st.integers(), args.frames, args.budget)
    print(f"  ours tools/call (schema arguments)  {split['rate']:7.0f}/s, {split['draw_share']:.0%} of CPU in the draw", flush=True)
    print(f"  ours tools/call (tool arguments)    {split_targeted['rate']:7.0f}/s, "
          f"{split_targeted['draw_share']:.0%} of CPU in the draw", flush=True)
    print(f"  Hypothesis engine, one integer per example {floor['rate']:7.0f}/s (the ceiling here)", flush=True)

    python, hjs_missing = (None, "skipped (--no-hjs)") if args.no_hjs else hjs_python(Path(args.venv))
    hjs: dict[str, dict[str, Any]] = {name: {"exact": {"error": hjs_missing}, "unrolled": {"error": hjs_missing}}
                                      for name in cases}
    hard_hjs: dict[str, dict[str, Any]] = {name: {"error": hjs_missing} for name in HARD_SCHEMAS}
    hjs_version = "?"
    if python is None:
        print(f"  hjs: {hjs_missing}; our numbers only", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        runner = Path(tmp) / "runner.py"
        runner.write_text(HJS_RUNNER)
        for name, variants in (cases.items() if python is not None else ()):
            hjs[name] = {}
            for variant, schema in variants.items():
                schema_file = Path(tmp) / "schema.json"
                schema_file.write_text(json.dumps(schema))
                last = run_hjs(python, runner, schema_file, args.frames, args.budget)
                hjs_version = last.get("hypothesis", hjs_version)
                hjs[name][variant] = last
                shown = last.get("error") or f"{last.get('rate', 0):.1f}/s ({last.get('frames', 0)} frames)"
                print(f"  hjs  {name:26} {variant:9} {shown}", flush=True)
        for name, schema in (HARD_SCHEMAS.items() if python is not None else ()):
            schema_file = Path(tmp) / "schema.json"
            schema_file.write_text(json.dumps(schema))
            hard_hjs[name] = run_hjs(python, runner, schema_file, args.frames, args.budget, only_valid=True)
            got = hard_hjs[name]
            print(f"  hjs  hard:{name:21} {got.get('error') or format(got.get('rate', 0.0), '.1f') + '/s'}", flush=True)

    print()
    hjs_note = f"hypothesis-jsonschema 0.23.1 on Hypothesis {hjs_version}" if python is not None else hjs_missing
    print(f"ours: Hypothesis {hyp_version}; {hjs_note}")
    print(f"{'schema':28} {'ours/frame':>11} {'ours/schema':>12} {'hjs/unrolled':>13} {'ratio':>7}  hjs/exact")
    ratios = []
    for name in cases:
        row = hjs[name]
        exact = row["exact"]
        exact_note = "ok" if "error" not in exact else exact["error"]
        unrolled = row["unrolled"]
        mine = ours[name]["schema"]["rate"]
        if "error" in unrolled or not unrolled.get("rate"):
            theirs, ratio_text = "error", "-"
        else:
            theirs = f"{unrolled['rate']:.0f}/s"
            ratio = mine / unrolled["rate"]
            ratios.append(ratio)
            ratio_text = f"{ratio:.1f}x"
        print(
            f"{name:28} {ours[name]['frame']['rate']:>9.0f}/s {mine:>10.0f}/s {theirs:>13} {ratio_text:>7}  {exact_note[:60]}"
        )
    print(f"\n{'tool inputSchema (hard keywords)':34} {'compiler+filter':>16} {'hjs+filter':>11} {'ratio':>7}")
    hard_ratios = []
    for name in HARD_SCHEMAS:
        mine, theirs = hard_ours[name]["rate"], hard_hjs[name].get("rate") or 0.0
        ratio_text = "-"
        if theirs and "error" not in hard_hjs[name]:
            hard_ratios.append(mine / theirs)
            ratio_text = f"{mine / theirs:.1f}x"
        print(f"{name:34} {mine:>14.0f}/s {theirs:>9.0f}/s {ratio_text:>7}")
    hard_median = statistics.median(hard_ratios) if hard_ratios else float("nan")
    call = ours["tools/call"]["frame"]["rate"]
    median = statistics.median(ratios) if ratios else float("nan")
    exact_failures = sum(1 for n in cases if "error" in hjs[n]["exact"])
    against = (f"ours/hypothesis-jsonschema median ratio {median:.1f}x over {len(ratios)} schemas (frames per CPU-second); "
               f"hjs failed {exact_failures}/{len(cases)} exact schemas; hard tool schemas compiler+filter/hjs+filter "
               f"median {hard_median:.1f}x over {len(hard_ratios)}") if python is not None else f"no hjs ratio: {hjs_missing}"
    print(
        f"bench_strategies: tools/call frames {call:.0f}/s (target 1000), with tool arguments "
        f"{split_targeted['rate']:.0f}/s, {split['draw_share']:.0%} of their CPU in the draw and the rest "
        f"Hypothesis' engine, whose one-integer ceiling here is {floor['rate']:.0f}/s; {against}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
