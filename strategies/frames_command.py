"""`mcp-tempest frames`: print generated frames, valid or malformed, one JSON line each.

Why a command: to see what the fuzzer sends, to feed a server by hand
(`mcp-tempest frames --method tools/call --count 5 | my-server`), and to list the
malformed catalogue with the rule each mutation probes. Output is deterministic in `--seed`.

Line format: a frame is printed as its JSON; a byte-level mutation as
`{"raw": "<the exact bytes before the final newline>"}` (JSON-escaped, so a raw CR, LF, NUL or
BOM is visible; bytes that are not UTF-8 are given as latin-1 with `"encoding": "latin-1"`);
a header mutation as `{"http_headers": {...}, "frame": {...}}`. Stdout carries frames only, so it
pipes into `jq` or a server; the one-line summary goes to stderr (CLI.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import orjson

from mcp_tempest.strategies.malformed import MUTATIONS, MalformedCase, base_methods, catalogue, malformed_case
from mcp_tempest.strategies.sampling import draw_examples
from mcp_tempest.strategies.schema_source import SchemaSourceError, load_schema_source
from mcp_tempest.targets.validate import InputError, frame_size


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit status 2, no usage dump
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcp-tempest frames", description="Print generated MCP frames, one JSON line each.")
    parser.add_argument("--method", help="request method or notifications/cancelled (default: any)")
    parser.add_argument("--malformed", metavar="NAME", help="apply this mutation (see --list)")
    parser.add_argument("--count", type=int, default=10, help="how many frames (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="same seed, same frames (default 0)")
    parser.add_argument("--list", action="store_true", help="list every mutation with the rule it probes")
    parser.add_argument("--schema", metavar="PATH", help="an official schema.json instead of mcp-types")
    parser.add_argument("--size", type=int, default=64 * 1024, help="line size for oversized-frame (default 65536)")
    return parser


def _dump(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def _raw_line(data: bytes) -> str:
    try:
        return _dump({"raw": data.decode("utf-8")})
    except UnicodeDecodeError:
        return _dump({"raw": data.decode("latin-1"), "encoding": "latin-1"})


def case_lines(case: MalformedCase) -> list[str]:
    """The printed lines of one malformed case."""
    if case.frames is None:  # byte level: show the bytes exactly as written, minus the final LF
        return [_raw_line(line + case.terminator[:-1]) for line in case.lines]
    if case.terminator != b"\n":
        return [_raw_line(line + case.terminator[:-1]) for line in case.lines]
    if case.level == "headers" and case.http_headers:
        return [_dump({"http_headers": case.http_headers[0], "frame": case.frames[0]})]
    return [_dump(frame) for frame in case.frames]


def _list(out: TextIO, err: TextIO) -> int:
    rows = catalogue()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        expect = row["expect"]
        out.write(
            f"{row['name']:<{width}}  {row['rule']:<8} {row['transport']:<5} {row['level']:<7} "
            f"{expect['kind']:<23} {expect['strength']:<9} {row['description']}\n"
        )
    err.write(f"frames: {len(rows)} mutations\n")
    return 0


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.list:
        return _list(out, err)
    if args.count < 0:
        raise _UsageError("--count must be >= 0")
    try:
        frame_size(args.size)  # 2^31 and more would be built in memory and crash
    except InputError as exc:
        raise _UsageError(str(exc)) from None
    source = load_schema_source(args.schema)
    if args.malformed:
        if args.malformed not in MUTATIONS:
            raise _UsageError(f"unknown mutation {args.malformed!r} (see --list)")
        if args.method and args.method not in base_methods(args.malformed, source):
            allowed = ", ".join(base_methods(args.malformed, source))
            raise _UsageError(f"mutation {args.malformed} does not apply to {args.method} (it applies to: {allowed})")
        strategy = malformed_case(args.malformed, method=args.method, schema_source=source, size=args.size)
        cases = draw_examples(strategy, args.count, args.seed)
        lines = 0
        for case in cases:
            for line in case_lines(case):
                out.write(line + "\n")
                lines += 1
        rule = MUTATIONS[args.malformed].rule
        where = f", method {args.method}" if args.method else ""
        extra = f" ({lines} lines)" if lines != len(cases) else ""
        err.write(f"frames: {len(cases)} frames{extra}, mutation {args.malformed} ({rule}){where}\n")
        return 0

    from mcp_tempest.strategies.frames import any_valid_frame, client_methods, valid_frame

    if args.method:
        if args.method not in client_methods(source):
            raise _UsageError(f"unknown method {args.method!r} (known: {', '.join(client_methods(source))})")
        strategy = valid_frame(args.method, schema_source=source)
    else:
        strategy = any_valid_frame(schema_source=source)
    frames = draw_examples(strategy, args.count, args.seed)
    for frame in frames:
        out.write(_dump(frame) + "\n")
    err.write(f"frames: {len(frames)} frames, method {args.method or 'any'}\n")
    return 0


def frames_main(argv: list[str]) -> int:
    """Entry point for `mcp-tempest frames ...` (the CLI passes the arguments after `frames`)."""
    out = sys.stdout
    try:
        args = _parser().parse_args(argv)
        return _run(args, out, sys.stderr)
    except _UsageError as exc:
        sys.stderr.write(f"mcp-tempest frames: error: {exc}\n")
        return 2
    except SchemaSourceError as exc:
        sys.stderr.write(f"mcp-tempest frames: error: {exc}\n")
        return 2
    except BrokenPipeError:  # `frames ... | head`
        return 0
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 2


if __name__ == "__main__":  # pragma: no cover - handy during development
    raise SystemExit(frames_main(sys.argv[1:]))
