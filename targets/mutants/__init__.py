"""One-bug mutants of the reference server: the yardstick for what the fuzzer claims to find.

Each mutant is the reference server with exactly one realistic deviation switched on by name
(`mcp-tempest serve --bug NAME`). The registry says which DIGEST rule ids a fuzzer should report
for it, so a campaign against a mutant can be scored: found the rule, or missed it. A rule listed
is the server's duty a finding is filed under, never the rule the provoking frame breaks (a
null id breaks the client's RPC-04; serving it breaks the server's RPC-01), so the list reads
like a campaign's findings (tests/test_mutants_found.py checks each against one). The code that
misbehaves lives next to the correct code in `targets/reference/` behind a flag, so a mutant can
never drift away from the server it mutates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal


@dataclass(frozen=True, slots=True)
class Mutant:
    name: str
    rules: tuple[str, ...]
    transport: Literal["any", "stdio", "http"]
    description: str
    # What finds it: a fuzz campaign, a load run (tests/test_load_mutants.py) or `mcp-tempest catalogue`
    # (tests/test_catalogue.py). `found_by(command)` lists each command's share. "reach": a fuzz
    # campaign too, but on a server started with `--workspace DIR` (its tool exists only there) and
    # only through the argument values the surface search collects (tests/test_reach_mutants.py).
    found_by: Literal["fuzz", "load", "catalogue", "reach"] = "fuzz"

    @property
    def needs_auth(self) -> bool:
        """Its bug lives in token validation: only a reference server run as a resource server of
        the harness's issuer (`--auth-issuer {issuer}`) under `fuzz --auth` can show it."""
        return all(rule.startswith("AUTH-") for rule in self.rules)


_ALL: Final[tuple[Mutant, ...]] = (
    Mutant("remembered-capabilities", ("META-02",), "any",
           "client capabilities declared on an earlier request are merged into later ones"),
    Mutant("memory-store", ("SL-5",), "any",
           "calendars and events live in process memory, so a fresh process cannot see them"),
    Mutant("memory-request-state", ("MRTR-18", "SL-3"), "any",
           "requestState is a key into a per-process table, so the retry must reach the same process"),
    Mutant("null-id-accepted", ("RPC-01",), "any",
           "a request with id null (a frame that breaks RPC-04) is served and answered with id null"),
    Mutant("cross-wired-ids", ("RPC-06",), "http",
           "an HTTP response carries the id of the previous request the process handled"),
    Mutant("missing-result-type", ("RT-01",), "any",
           "complete results omit resultType, as a 2025-era result builder would"),
    Mutant("stdout-log", ("STDIO-03",), "stdio",
           "a human-readable log line is printed to stdout for every request"),
    Mutant("unsigned-request-state", ("MRTR-13",), "any",
           "the requestState MAC is never checked, so tampered or forged state is honoured"),
    Mutant("list-input-required", ("MRTR-01",), "any",
           "tools/list sheds load with an input_required result carrying only requestState"),
    Mutant("missing-meta-32601", ("META-04",), "any",
           "a request without the required _meta keys gets -32601 instead of -32602"),
    Mutant("unsupported-version-no-data", ("META-06",), "any",
           "the -32022 error omits data.supported and data.requested"),
    Mutant("exit-on-newline", ("RPC-01",), "stdio",
           "an empty line on stdin (a frame that breaks STDIO-02) is mistaken for end of input and the server exits"),
    Mutant("era-lock", ("SL-2",), "stdio",
           "after a request whose _meta is not an object the process refuses every later request with "
           "-32600 (\"serves the handshake protocol era\"), as the official Python SDK's stdio server does"),
    Mutant("list-changes-after-call", ("TOOL-02",), "any",
           "after any tools/call the process adds an `undo_last_call` tool to its tools/list"),
    Mutant("serverinfo-top-level", ("DISC-04",), "any",
           "server/discover puts serverInfo in the result body instead of result._meta"),
    Mutant("reply-to-notification", ("RPC-10",), "any",
           "notifications are dispatched like requests and answered with an id-null error"),
    Mutant("http-session-id", ("SL-10",), "http",
           "HTTP responses mint an Mcp-Session-Id header (and echo an incoming one)"),
    Mutant("http-200-header-mismatch", ("HDR-01",), "http",
           "a -32020 header-mismatch error is sent with HTTP 200 instead of 400"),
    Mutant("http-200-unknown-method", ("HDR-05",), "http",
           "a -32601 unknown-method error is sent with HTTP 200 instead of 404"),
    Mutant("http-get-200", ("SL-11",), "http",
           "GET and DELETE on the endpoint are answered 200 (an empty event stream) instead of 405"),
    Mutant("tools-list-reordered", ("TOOL-03",), "any",
           "every other tools/list answer lists the same tools in reverse order"),
    Mutant("tool-name-invalid", ("TOOL-06",), "any",
           "tools/list also lists a tool named `echo text` (a space is not allowed in a tool name)"),
    Mutant("structured-without-text", ("TOOL-12",), "any",
           "tool results with structuredContent carry no TextContent block (content is empty)"),
    Mutant("optional-argument-required", ("TOOL-10",), "any",
           "list_events reads its optional `limit` as if required: a valid call without it raises, answered -32603"),
    Mutant("unknown-tool-is-error", ("TOOL-09",), "any",
           "tools/call of a tool the server does not have is answered with an isError result instead of -32602"),
    Mutant("traceback-in-error", ("TOOL-15",), "any",
           "a tool's execution error (isError) carries the Python traceback of the exception as its text"),
    Mutant("progress-without-token", ("PROG-01",), "any",
           "tools/call reports progress under the request id when the request sent no progressToken"),
    Mutant("progress-not-increasing", ("PROG-02",), "any",
           "the second progress notification of a tools/call repeats the first value"),
    Mutant("progress-after-response", ("PROG-03",), "any",
           "the final progress notification of a tools/call is written after the response"),
    Mutant("log-without-level", ("LOG-01",), "any",
           "a request without logLevel is logged at info, as if that were the default"),
    Mutant("log-below-level", ("LOG-02",), "any",
           "the requested logLevel is ignored: every message is sent, below the level too"),
    Mutant("client-info-required", ("META-08",), "any",
           "tools/call fails with -32603 when the request carries no clientInfo (an audit log reads its name)"),
    Mutant("param-header-unchecked", ("HDR-08",), "http",
           "Mcp-Param-* headers are never checked: a tools/call without one, or with another value, is served"),
    Mutant("header-whitespace-refused", ("HDR-03",), "http",
           "header values are compared with the body without trimming optional whitespace (RFC 9110 §5.5), "
           "so a request whose Mcp-Method or MCP-Protocol-Version ends in a space is refused with -32020"),
    Mutant("cancel-echo", ("CAN-06",), "stdio",
           "a client's notifications/cancelled is acknowledged with a notifications/cancelled of the server's own"),
    Mutant("listen-id-as-string", ("SUB-04",), "any",
           "the listen acknowledgement names the subscription by the id's text (1 becomes \"1\")"),
    Mutant("listen-end-id-as-string", ("SUB-08",), "stdio",
           "at shutdown an open listen stream ends with a result naming the subscription by the id's text"),
    Mutant("auth-audience-unchecked", ("AUTH-03",), "http",
           "with --auth-issuer: a token's aud is never compared with this server, so a token issued for another resource is served"),
    Mutant("auth-expiry-unchecked", ("AUTH-04",), "http",
           "with --auth-issuer: a token's exp is never looked at, so an expired token is served"),
    Mutant("auth-signature-unchecked", ("AUTH-07",), "http",
           "with --auth-issuer: a token's claims are read without verifying its signature (alg none, foreign keys too)"),
    Mutant("auth-no-www-authenticate", ("AUTH-11",), "http",
           "with --auth-issuer: a 401 or 403 is sent without a WWW-Authenticate header"),
    Mutant("auth-metadata-origin-resource", ("AUTH-14",), "http",
           "with --auth-issuer: the protected resource metadata names the server's origin as resource, not its /mcp endpoint"),
    Mutant("slow-leak", ("MRTR-17",), "any",
           "every request body (plus an 8 KiB buffer) is kept forever in a module-level list", "load"),
    Mutant("catalogue-drift", ("TOOL-02",), "any",
           "the echo tool's description changes after the first tools/list the process answers", "catalogue"),
    Mutant("process-description", ("TOOL-02",), "any",
           "the echo tool's description embeds the process's start time, so two processes list it differently",
           "catalogue"),
    Mutant("poisoned-description", ("TEXT-01", "TEXT-02", "TEXT-03", "TEXT-04"), "any",
           "the echo tool's description hides a zero-width and a bidi character, an <IMPORTANT> block telling "
           "the model to call another server's send_email tool without telling the user, and an ANSI escape",
           "catalogue"),
    # The workspace mutants (reach): each fails past its tool's refusals, on a value only the surface
    # search's pools hold, and ends the process as the script its helpers were lifted from does.
    Mutant("read-note-mtime-ns", ("RPC-01",), "stdio",
           "with --workspace: read_note formats a path's st_mtime_ns as if it were seconds and exits on the "
           "error, so reading any path inside the workspace is never answered (paths outside are refused)", "reach"),
    Mutant("note-template-placeholder", ("RPC-01",), "stdio",
           "with --workspace: note_template's \"agenda\" kind (a plain string argument; the word is only in the "
           "source) has a placeholder nothing fills, and the process exits on the KeyError", "reach"),
    Mutant("search-query-off-by-one", ("RPC-01",), "stdio",
           "with --workspace: search_notes' index key holds one character fewer than the schema's maxLength, "
           "so a query of exactly maxLength characters ends the process", "reach"),
    Mutant("export-path-object", ("RPC-01",), "stdio",
           "with --workspace: export_calendar puts a pathlib.Path in its result and exits when it cannot be "
           "encoded, so exporting a calendar that exists (a calendarId open_calendar returned) is never answered",
           "reach"),
)

MUTANTS: Final[dict[str, Mutant]] = {m.name: m for m in _ALL}


class UnknownBugError(ValueError):
    """A `--bug` name that is not in the registry; the message lists the known names."""


def parse_bugs(names: Iterable[str]) -> frozenset[str]:
    """Validate bug names; raises UnknownBugError naming the first unknown one."""
    chosen = frozenset(names)
    for name in sorted(chosen):
        if name not in MUTANTS:
            raise UnknownBugError(f"unknown bug {name!r} (see --list-bugs)")
    return chosen


def found_by(command: Literal["fuzz", "load", "catalogue", "reach"]) -> list[str]:
    """The mutants `command` is the one to find, in registry order: the one place a test that runs
    every mutant through one command learns which are its own."""
    return [m.name for m in _ALL if m.found_by == command]


def transport_label(mutant: Mutant) -> str:
    """The transport a campaign must use to see the bug, in words a user types (`--transport`)."""
    return "both" if mutant.transport == "any" else mutant.transport


def list_lines() -> list[str]:
    """The `--list-bugs` output: `name<TAB>rule ids<TAB>transport<TAB>description` lines (rule ids
    comma-separated; transport stdio, http or both), so a newcomer picks a bug that can show over the
    transport they fuzz, and a script still reads the first two columns."""
    return [f"{m.name}\t{','.join(m.rules)}\t{transport_label(m)}\t{m.description}" for m in _ALL]


def _reference_bugs(argv: Sequence[str]) -> list[str]:
    """The `--bug` names of a command line that starts the reference server (`mcp-tempest serve`,
    `python -m mcp_tempest.targets.reference`); none for any other command, whose flags are its own."""
    words = list(argv)
    is_reference = any(
        (Path(word).name.startswith("mcp-tempest") and words[i + 1:i + 2] == ["serve"])
        or (word == "-m" and words[i + 1:i + 2] == ["mcp_tempest.targets.reference"])
        or (word == "-m" and words[i + 1:i + 3] == ["mcp_tempest.fuzz.cli", "serve"])
        for i, word in enumerate(words))
    if not is_reference:
        return []
    bugs = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--bug"]
    return bugs + [word.partition("=")[2] for word in words if word.startswith("--bug=")]


def campaign_notes(argv: Sequence[str], transport: str) -> list[str]:
    """Why a fuzz campaign on the reference server with `--bug X` cannot show X, said before it runs:
    a bug of the other transport, or one another command finds, otherwise ends in 0 findings and
    exit 0 with no word why."""
    notes = []
    for name in _reference_bugs(argv):
        mutant = MUTANTS.get(name)
        if mutant is None:
            continue
        if mutant.transport not in ("any", transport):
            notes.append(f"bug {name} shows only over {mutant.transport}; this run uses {transport}")
        elif mutant.found_by in ("load", "catalogue"):
            notes.append(f"bug {name} is found by `mcp-tempest {mutant.found_by}`, not by a fuzz campaign")
    return notes
