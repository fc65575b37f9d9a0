"""The reference server's tools: the calendar, plus the fixtures the conformance suite calls.

Each tool is `fn(core, ctx, args) -> result dict`. Input problems of a known tool are execution
errors (`isError: true`, DIGEST TOOL-10) so a model can correct itself; a missing client
capability is a protocol error (-32021, META-05 / MRTR-08), raised as RpcError.
"""

from __future__ import annotations

import re
import stat
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from mcp_tempest.targets.reference.catalog import SEARCH_QUERY_MAX
from mcp_tempest.targets.reference.errors import RpcError
from mcp_tempest.targets.reference.store import CHAPTER_CALENDAR_ID, ReplayError
from mcp_tempest.targets.wire import INVALID_PARAMS, MISSING_CLIENT_CAPABILITY

if TYPE_CHECKING:
    from mcp_tempest.targets.reference.core import Core, Ctx

ToolFn = Callable[["Core", "Ctx", dict[str, Any]], dict[str, Any]]

_RFC3339: Final = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})\Z")
_ELICIT_ACTIONS: Final = frozenset({"accept", "decline", "cancel"})


def text_result(text: str, structured: Any = None, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "complete", "content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    return result


def structured_result(structured: dict[str, Any]) -> dict[str, Any]:
    """structuredContent plus the same JSON as text (TOOL-12)."""
    return text_result(orjson.dumps(structured).decode(), structured)


def tool_error(text: str) -> dict[str, Any]:
    return text_result(text, is_error=True)


def valid_date_time(value: Any) -> bool:
    if not isinstance(value, str) or not _RFC3339.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T").replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def supports_form(caps: dict[str, Any]) -> bool:
    """`elicitation: {}` means form; a client that lists modes must list `form` (MRTR-06)."""
    elicitation = caps.get("elicitation")
    return isinstance(elicitation, dict) and ("form" in elicitation or "url" not in elicitation)


def require_form(caps: dict[str, Any]) -> None:
    if supports_form(caps):
        return
    wanted = {"form": {}} if isinstance(caps.get("elicitation"), dict) else {}
    raise RpcError(MISSING_CLIENT_CAPABILITY, "this request needs the client's elicitation (form) capability",
                   {"requiredCapabilities": {"elicitation": wanted}})


def _string_arg(args: dict[str, Any], name: str, max_len: int) -> str | None:
    value = args.get(name)
    if isinstance(value, str) and 0 < len(value) <= max_len:
        return value
    return None


def _answer(ctx: Ctx, key: str) -> dict[str, Any] | None:
    """The ElicitResult answering `key`, None when absent; a malformed one is a protocol error (MRTR-16)."""
    responses = ctx.params.get("inputResponses")
    if responses is None:
        return None
    if not isinstance(responses, dict):
        raise RpcError(INVALID_PARAMS, "inputResponses must be an object")
    answer = responses.get(key)
    if answer is None:
        return None
    if not isinstance(answer, dict) or answer.get("action") not in _ELICIT_ACTIONS:
        raise RpcError(INVALID_PARAMS, f"inputResponses.{key} is not an elicitation result")
    content = answer.get("content")
    if content is not None and not isinstance(content, dict):
        raise RpcError(INVALID_PARAMS, f"inputResponses.{key}.content must be an object")
    return answer


# --- calendar tools ---


def echo(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    text = args.get("text")
    if not isinstance(text, str):
        return tool_error("text must be a string")
    return text_result(text)


def open_calendar(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    name = _string_arg(args, "name", 100)
    if name is None:
        return tool_error("name must be a string of 1 to 100 characters")
    return structured_result({"calendarId": core.store.open_calendar(name), "name": name})


def _ask_start(core: Core, ctx: Ctx, args: dict[str, Any], title: str) -> dict[str, Any]:
    require_form(ctx.caps)
    return {
        "resultType": "input_required",
        "inputRequests": {
            "startsAt": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": f"When does {title!r} start?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"startsAt": {
                            "type": "string", "format": "date-time", "title": "Start",
                            "description": "RFC 3339 date-time, e.g. 2026-08-03T09:00:00Z",
                        }},
                        "required": ["startsAt"],
                    },
                },
            }
        },
        "requestState": core.states.seal("tools/call", "create_event", ctx.params.get("arguments")),
    }


def create_event(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    title = _string_arg(args, "title", 200)
    if title is None:
        return tool_error("title must be a string of 1 to 200 characters")
    calendar_id = args.get("calendarId", CHAPTER_CALENDAR_ID)
    if not isinstance(calendar_id, str) or not core.store.calendar_exists(calendar_id):
        return tool_error("unknown calendarId; call open_calendar first")
    if "startsAt" in args:
        if not valid_date_time(args["startsAt"]):
            return tool_error("startsAt must be an RFC 3339 date-time, e.g. 2026-08-03T09:00:00Z")
        ctx.log("notice", {"tool": "create_event", "outcome": "created"})
        return structured_result(core.store.create_event(calendar_id, title, args["startsAt"]))
    claims = ctx.state
    answer = _answer(ctx, "startsAt") if claims is not None else None
    if claims is None or answer is None:
        return _ask_start(core, ctx, args, title)
    if answer["action"] != "accept":
        # Single use holds for every answer: a declined state must not create the event later.
        try:
            core.store.spend_state(claims.nonce, claims.expires_ms)
        except ReplayError:
            raise RpcError(INVALID_PARAMS, "requestState already used") from None
        return tool_error(f"event not created: the user chose {answer['action']}")
    starts_at = (answer.get("content") or {}).get("startsAt")
    if not valid_date_time(starts_at):
        return tool_error("startsAt must be an RFC 3339 date-time, e.g. 2026-08-03T09:00:00Z")
    try:
        event = core.store.create_event(calendar_id, title, starts_at, spend=(claims.nonce, claims.expires_ms))
    except ReplayError:
        raise RpcError(INVALID_PARAMS, "requestState already used") from None
    ctx.log("notice", {"tool": "create_event", "outcome": "created"})
    return structured_result(event)


def list_events(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if "optional-argument-required" in ctx.bugs:
        # The mutant (TOOL-10): the optional `limit` read as if required, so a call without it
        # raises KeyError, which the dispatcher answers -32603 instead of a result.
        args["limit"]  # noqa: B018 - the bug is this lookup
    calendar_id = args.get("calendarId")
    if not isinstance(calendar_id, str) or not core.store.calendar_exists(calendar_id):
        return tool_error("unknown calendarId; call open_calendar first")
    limit = args.get("limit", 50)
    if type(limit) is not int or not 1 <= limit <= 100:
        return tool_error("limit must be an integer from 1 to 100")
    return structured_result({"calendarId": calendar_id, "events": core.store.list_events(calendar_id, limit)})


# --- conformance fixtures ---


def fixture_missing_capability(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(ctx.caps.get("sampling"), dict):
        raise RpcError(MISSING_CLIENT_CAPABILITY, "this tool needs the client's sampling capability",
                       {"requiredCapabilities": {"sampling": {}}})
    return text_result("sampling capability declared")


def fixture_streaming_elicitation(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    answer = _answer(ctx, "answer") if ctx.state is not None else None
    if answer is None:
        require_form(ctx.caps)
        return {
            "resultType": "input_required",
            "inputRequests": {"answer": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Say something",
                "requestedSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                                    "required": ["text"]},
            }}},
            "requestState": core.states.seal("tools/call", "test_streaming_elicitation",
                                             ctx.params.get("arguments")),
        }
    if answer["action"] != "accept":
        return text_result(f"user chose {answer['action']}")
    return text_result(str((answer.get("content") or {}).get("text", "")))


def fixture_logging_tool(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    ctx.log("info", "logging fixture started")
    ctx.log("warning", "logging fixture halfway")
    ctx.log("error", "logging fixture done")
    return text_result("logged")


# --- workspace tools (only with --workspace DIR) ---
#
# Each refuses what it cannot serve with an isError result; the one-bug mutants of these tools fail
# only past those refusals, on a value no schema names (see targets/mutants). A mutant's failure
# ends the process the way the command-line script these helpers were lifted from ends (sys.exit):
# an answer that never comes is judged on any call (RPC-01), where a -32603 is judged as TOOL-10
# only in a transcript that also listed the tool.

MAX_NOTE_BYTES: Final = 1 << 20
MAX_ENTRIES: Final = 100
MAX_MATCHES: Final = 50
_NOTE_TEMPLATES: Final[dict[str, str]] = {
    "agenda": "# {title}\n\n## Topics\n- \n\n## Decisions\n- \n",
    "minutes": "# {title}\n\nPresent: \n\n## Notes\n- \n",
    "retro": "# {title}\n\n## Went well\n- \n\n## To change\n- \n",
}
# The note-template-placeholder mutant's agenda: a placeholder nobody fills.
_DATED_AGENDA: Final = "# {title} ({date})\n\n## Topics\n- \n\n## Decisions\n- \n"


def _modified(info: Any, bugs: frozenset[str]) -> str:
    if "read-note-mtime-ns" in bugs:
        # the mutant: nanoseconds taken for seconds; datetime refuses a year that far away
        try:
            return datetime.fromtimestamp(info.st_mtime_ns, UTC).isoformat()
        except (OSError, OverflowError, ValueError) as exc:
            sys.exit(f"read_note: cannot format the modification time: {exc}")
    return datetime.fromtimestamp(info.st_mtime, UTC).isoformat()


def _notes(root: Path) -> list[Path]:
    """The workspace's own notes: visible regular files directly in it, by name."""
    try:
        return sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.is_file())[:MAX_ENTRIES]
    except OSError:
        return []


def _note_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_NOTE_BYTES:
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_note(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    raw = _string_arg(args, "path", 1024)
    root = core.workspace
    if raw is None or root is None:
        return tool_error("path must be a string of 1 to 1024 characters")
    if not raw.startswith("/"):
        return tool_error("path must be absolute: a note or folder inside the workspace")
    try:
        path = Path(raw).resolve()
        inside = path.is_relative_to(root)
        info = path.stat() if inside else None
    except (OSError, ValueError, RuntimeError):
        return tool_error(f"no such note: {raw}")
    if info is None:
        return tool_error(f"{raw} is outside the workspace")
    modified = _modified(info, ctx.bugs)
    if stat.S_ISDIR(info.st_mode):
        try:
            entries = sorted(e.name for e in path.iterdir() if not e.name.startswith("."))[:MAX_ENTRIES]
        except OSError:
            return tool_error(f"cannot list {raw}")
        return structured_result({"path": str(path), "modified": modified, "entries": entries})
    text = _note_text(path) if stat.S_ISREG(info.st_mode) else None
    if text is None:
        return tool_error(f"{raw} is not a UTF-8 note of at most {MAX_NOTE_BYTES} bytes")
    return structured_result({"path": str(path), "modified": modified, "text": text})


def _query_key(query: str, bugs: frozenset[str]) -> str:
    """The search index keys a query in a fixed-width field of SEARCH_QUERY_MAX characters."""
    # the search-query-off-by-one mutant sized the field with room for a terminator
    width = SEARCH_QUERY_MAX - 1 if "search-query-off-by-one" in bugs else SEARCH_QUERY_MAX
    if len(query) > width:  # never true in the reference: the argument check allows SEARCH_QUERY_MAX
        sys.exit(f"search_notes: a query of {len(query)} characters does not fit the index")
    return query.casefold().ljust(width)


def search_notes(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    query = args.get("query")
    if not isinstance(query, str) or len(query) > SEARCH_QUERY_MAX or core.workspace is None:
        return tool_error(f"query must be a string of at most {SEARCH_QUERY_MAX} characters")
    wanted = _query_key(query, ctx.bugs).rstrip(" ")  # trailing blanks of a query are not searched for
    matches: list[dict[str, Any]] = []
    for note in _notes(core.workspace):
        for number, line in enumerate((_note_text(note) or "").splitlines(), 1):
            if wanted in line.casefold() and len(matches) < MAX_MATCHES:
                matches.append({"note": note.name, "line": number, "text": line[:200]})
    return structured_result({"matches": matches})


def note_template(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    kind = _string_arg(args, "kind", 40)
    template = _NOTE_TEMPLATES.get(kind) if kind is not None else None
    if kind is None or template is None:
        return tool_error("unknown kind of note")
    if kind == "agenda" and "note-template-placeholder" in ctx.bugs:
        template = _DATED_AGENDA
    try:
        return text_result(template.format(title=f"New {kind}"))
    except KeyError as exc:  # only the mutant's agenda names a placeholder nobody fills
        sys.exit(f"note_template: no value for {exc}")


def export_calendar(core: Core, ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    calendar_id = args.get("calendarId")
    root = core.workspace
    if not isinstance(calendar_id, str) or root is None or not core.store.calendar_exists(calendar_id):
        return tool_error("unknown calendarId; call open_calendar first")
    events = core.store.list_events(calendar_id, 100)
    target = root / ("calendar-" + re.sub(r"[^A-Za-z0-9_-]", "_", calendar_id) + ".json")
    try:
        target.write_bytes(orjson.dumps({"calendarId": calendar_id, "events": events}))
    except OSError as exc:
        return tool_error(f"cannot write the export: {exc.strerror or exc}")
    # the export-path-object mutant returns the Path itself, which no JSON encoder takes
    where: Any = target if "export-path-object" in ctx.bugs else str(target)
    try:
        return structured_result({"calendarId": calendar_id, "path": where, "events": len(events)})
    except TypeError as exc:  # orjson's JSONEncodeError; only the mutant's Path raises it
        sys.exit(f"export_calendar: {exc}")


WORKSPACE_FUNCTIONS: Final[dict[str, ToolFn]] = {
    "read_note": read_note,
    "search_notes": search_notes,
    "note_template": note_template,
    "export_calendar": export_calendar,
}


TOOL_FUNCTIONS: Final[dict[str, ToolFn]] = {
    "echo": echo,
    "open_calendar": open_calendar,
    "create_event": create_event,
    "list_events": list_events,
    "test_missing_capability": fixture_missing_capability,
    "test_streaming_elicitation": fixture_streaming_elicitation,
    "test_logging_tool": fixture_logging_tool,
}
