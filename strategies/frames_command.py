"""`mcp-tempest frames`: print generated frames, valid or malformed, one JSON line each.

Why a command: to see what the fuzzer sends, to feed a server by hand
(`mcp-tempest frames --method tools/call --count 5 | my-server`), and to list the
malformed catalogue with the rule each mutation probes. Output is deterministic in `--seed`.

Line format: a frame is printed as its JSON; a byte-level mutation as
`{"raw": "<the exact bytes before the final newline>"}` (JSON-escaped, so a raw CR, LF, NUL or
BOM is visible; bytes that are not UTF-8 are given as latin-1 with `"encoding": "latin-1"`);
a header mutation as `{"http_headers": {...}, "frame": {...}}`. Stdout carries frames only, so it
pipes into `jq` or a server; the one-line summary goes to stderr (CLI.md), written by the command
around this (fuzz/frames_command.py: its words are fuzz/verdict_line.py's, which `strategies`,
being pure, does not import): `run_frames` writes the frames and says what to summarise.
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple, TextIO

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


class FramesOutcome(NamedTuple):
    """What a run of `frames` printed, for its one-line summary: `count` `noun`s, then `detail`
    (`, method tools/call`); `why` is the one-line reason of a bad input (status 2)."""

    status: int
    count: int
    noun: str
    detail: str = ""
    why: str = ""


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


def _list(out: TextIO) -> FramesOutcome:
    rows = catalogue()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        expect = row["expect"]
        out.write(
            f"{row['name']:<{width}}  {row['rule']:<8} {row['transport']:<5} {row['level']:<7} "
            f"{expect['kind']:<23} {expect['strength']:<9} {row['description']}\n"
        )
    return FramesOutcome(0, len(rows), "mutation")


def _run(args: argparse.Namespace, out: TextIO) -> FramesOutcome:
    if args.list:
        return _list(out)
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
        return FramesOutcome(0, len(cases), "frame", f"{extra}, mutation {args.malformed} ({rule}){where}")

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
    return FramesOutcome(0, len(frames), "frame", f", method {args.method or 'any'}")


def run_frames(argv: list[str], out: TextIO) -> FramesOutcome | None:
    """`mcp-tempest frames ...` (the arguments after `frames`): the frames to `out`, and what to
    summarise; None after --help (argparse printed it). A BrokenPipeError (`frames | head`) is
    the caller's to take."""
    try:
        args = _parser().parse_args(argv)
        return _run(args, out)
    except (_UsageError, SchemaSourceError) as exc:
        return FramesOutcome(2, 0, "frame", why=str(exc))
    except SystemExit:  # --help
        return None
