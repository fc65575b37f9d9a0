"""`mcp-tempest serve`: start the reference server (or one of its mutants) on stdio or HTTP."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import NoReturn

from mcp_tempest.targets import validate
from mcp_tempest.targets.mutants import UnknownBugError, list_lines, parse_bugs
from mcp_tempest.targets.reference.store import default_db_path


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is ONE line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mcp-tempest serve: error: {message}\n")


def _parser() -> _Parser:
    parser = _Parser(prog="mcp-tempest serve",
                     description="The reference MCP 2026-07-28 server (calendar) and its one-bug mutants.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0,
                        help="HTTP port; 0 picks a free one (default). The URL is printed on stderr.")
    parser.add_argument("--db", default=None,
                        help=f"SQLite store shared by every process naming it (default {default_db_path()})")
    parser.add_argument("--bug", action="append", default=[], metavar="NAME",
                        help="switch on a mutant bug; repeatable (see --list-bugs)")
    parser.add_argument("--list-bugs", action="store_true", help="print each bug: name, rule ids, the transport it shows over (stdio, http or both) "
                             "and what it does, tab-separated")
    parser.add_argument("--state-ttl", type=float, default=600.0, metavar="SECONDS",
                        help="lifetime of a requestState (default 600)")
    parser.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="HTTP: time from a request's first byte to the end of its headers (default 10)")
    parser.add_argument("--auth-issuer", default=None, metavar="URL",
                        help="HTTP: be an OAuth resource server trusting this loopback issuer (its RFC 8414 "
                             "metadata and JWKS); every request then needs a valid Bearer token of scope mcp")
    parser.add_argument("--workspace", default=None, metavar="DIR",
                        help="also serve the notes of this folder (tools read_note, search_notes, note_template, "
                             "export_calendar); without it the catalogue is the calendar's alone")
    parser.add_argument("--tool-delay-ms", type=float, default=0.0, metavar="MS",
                        help="HTTP, a test aid: answer every tools/call this much later (without blocking other "
                             "requests), a build slower per tool call for `load --compare-target` to catch")
    return parser


def serve_main(argv: list[str]) -> int:
    """Entry point of `mcp-tempest serve`; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.list_bugs:
        print("\n".join(list_lines()))
        return 0
    try:
        bugs = parse_bugs(args.bug)
    except UnknownBugError as exc:
        print(f"mcp-tempest serve: error: {exc}", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print("mcp-tempest serve: error: --port must be 0..65535", file=sys.stderr)
        return 2
    try:
        validate.seconds(args.state_ttl, "--state-ttl")
        validate.seconds(args.header_timeout, "--header-timeout")
    except validate.InputError as exc:
        print(f"mcp-tempest serve: error: {exc}", file=sys.stderr)
        return 2
    if not (0.0 <= args.tool_delay_ms <= 60_000.0):
        print("mcp-tempest serve: error: --tool-delay-ms must be between 0 and 60000", file=sys.stderr)
        return 2
    if args.tool_delay_ms and args.transport != "http":
        print("mcp-tempest serve: error: --tool-delay-ms applies to --transport http", file=sys.stderr)
        return 2
    if args.workspace is not None and not Path(args.workspace).is_dir():
        print(f"mcp-tempest serve: error: --workspace {args.workspace}: not a folder", file=sys.stderr)
        return 2
    from mcp_tempest.targets.reference.core import build_core

    try:
        core = build_core(args.db or default_db_path(), bugs=bugs, state_ttl_s=args.state_ttl,
                          workspace=Path(args.workspace) if args.workspace is not None else None)
    except (OSError, sqlite3.Error) as exc:
        print(f"mcp-tempest serve: error: cannot open store {args.db or default_db_path()}: {exc}",
              file=sys.stderr)
        return 2
    core.tool_delay_s = args.tool_delay_ms / 1000.0
    if args.transport == "stdio":
        from mcp_tempest.targets.reference.stdio_server import serve_stdio

        return serve_stdio(core)
    from mcp_tempest.targets.reference.http_server import serve_http

    guard = None
    if args.auth_issuer is not None:
        from mcp_tempest.targets.auth_client import AuthServerError
        from mcp_tempest.targets.reference.auth import ResourceGuard

        try:
            guard = ResourceGuard(args.auth_issuer, bugs)
        except (AuthServerError, OSError, ValueError, KeyError) as exc:
            print(f"mcp-tempest serve: error: --auth-issuer {args.auth_issuer}: {exc}", file=sys.stderr)
            return 2
    try:
        return serve_http(core, args.host, args.port, header_timeout=args.header_timeout, guard=guard)
    except OSError as exc:
        print(f"mcp-tempest serve: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
