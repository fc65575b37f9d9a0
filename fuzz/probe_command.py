"""`mcp-tempest probe`: the command around targets/probe.py's `probe`: what it prints, how it ends.

Why here and not beside `probe`: its last line is fuzz/verdict_line.py's `final_line`, and
`targets` imports nothing from `fuzz` (ARCHITECTURE.md), so the command lives with the others.

Exit status: 0 probed (any era, legacy included: the probe says which), 2 bad input or an
unusable target, 130 interrupted. The last stdout line is `probe: <era and counts>: WORD (why)`;
under `--json` stdout is exactly one JSON object on every one of those paths, its `verdict`
holding the same words and, when nothing was probed, `error` the reason.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

import orjson

from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.verdict_line import final_line, unusable, verdict_json
from mcp_tempest.targets import auth_client, extra_headers, validate
from mcp_tempest.targets.list_reader import budget_from_args
from mcp_tempest.targets.probe import ProbeFailure, build_parser, probe
from mcp_tempest.targets.target_spec import TargetError, parse_target

NOTHING_PROBED = "no era"  # the counts of a run that learned nothing


def probe_main(argv: list[str]) -> int:
    """`mcp-tempest probe [--target T] [--json] [--timeout S]`: 0 probed, 2 unusable target."""
    as_json = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a usage mistake's one line (argparse's), or --help (0)
        sys.stderr.write(said.getvalue())
        status = exc.code if isinstance(exc.code, int) else 2
        why = said.getvalue().strip().removeprefix("probe: ") or "bad command line"
        return _ended(as_json, None, status, visible(why)) if status and as_json else status
    sys.stderr.write(said.getvalue())
    try:
        validate.seconds(args.timeout, "--timeout")
        budget = budget_from_args(args)
        extra_headers.configure(args.header)
    except (validate.InputError, extra_headers.HeaderError) as exc:
        print(f"probe: {visible(exc)}", file=sys.stderr)
        return _ended(as_json, args.target, 2, visible(exc)) if as_json else 2
    session = None
    try:
        if not args.auth and auth_client.needs_issuer([args.target or ""]):
            raise auth_client.AuthServerError("the target command names {issuer}: add --auth")
        session = auth_client.start(args.auth, args.auth_issuer, announce=lambda line: print(line, file=sys.stderr))
        spec = parse_target(args.target, allow_remote=args.allow_remote, isolate_network=args.isolate_network)
        result = probe(spec, timeout=args.timeout, budget=budget, check_dual=not args.no_dual)
    except ProbeFailure as exc:  # may quote the server: escaped
        print(f"probe: {visible(exc)}", file=sys.stderr)
        return _ended(as_json, args.target, 2, unusable(visible(exc)))
    except (TargetError, auth_client.AuthServerError) as exc:
        print(f"probe: {visible(exc)}", file=sys.stderr)
        return _ended(as_json, args.target, 2, visible(exc))
    except KeyboardInterrupt:
        print("probe: interrupted", file=sys.stderr)
        return _ended(as_json, args.target, 130, "interrupted")
    finally:
        if session is not None:
            session.close()
    counts = visible(result.summary_line().removeprefix("probe: "))  # a legacy version is the server's
    if as_json:
        _write_json({**result.to_json(), "verdict": verdict_json("probe", counts, 0)})
    else:
        for line in result.human().splitlines():  # server names, versions, problems: its own text
            print(visible(line))
        print(final_line("probe", counts, 0))
    return 0


def _ended(as_json: bool, target: str | None, status: int, reason: str) -> int:
    """Nothing probed: the last line, or under --json the one object, with the reason."""
    if as_json:
        _write_json({"target": target, "era": None, "error": reason,
                     "verdict": verdict_json("probe", NOTHING_PROBED, status, [reason])})
    else:
        print(final_line("probe", NOTHING_PROBED, status, [reason]))
    return status


def _write_json(doc: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(doc).decode() + "\n")


if __name__ == "__main__":  # pragma: no cover - the console script is the lead's
    raise SystemExit(probe_main(sys.argv[1:]))
