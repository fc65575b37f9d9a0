"""Where a tool's argument values come from, beyond what its inputSchema alone generates.

Why: a schema says `repo_path: string`; a generator that knows only that draws strings the
server refuses at its first check ("Path ... is outside the repository"), so the tool's body never
runs and a campaign tests the argument check a thousand times. A user passes what no fuzzer can
guess on the command line (the git server's `--repository`), the server returns what its other
tools take (a calendar's id, a branch name), the schema names its own good values (`examples`,
`default`, `enum`, exact boundaries), and a Python server's own source holds the literals its code
compares against. Each is a pool here; generation draws from them alongside the schema, and a
first success is attributed to the pool its values came from.

Pure data: no I/O here. The pools are filled by the campaign (fuzz/) and travel to worker
processes as JSON.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # imported where it is used: load's Locust processes read the pools without Hypothesis
    from hypothesis import strategies as st

#: The pools in the order a first success is attributed to them (the most specific first).
SOURCES: Final = ("user", "command line", "returned", "returned text", "schema", "source literal")
MAX_POOL = 64  # values per pool and key: a pool feeds sampled_from, it is not a corpus
MAX_TEXT = 200  # longer strings are not worth offering as argument values
_PATHY = re.compile(r"path|dir|folder|repo|root|file|cwd|workspace|project", re.I)
_URLY = re.compile(r"url|uri|endpoint|href|link|host", re.I)
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$", re.I)
_FLAG_VALUE = re.compile(r"^--?[A-Za-z][\w-]*=(.+)$")
_QUOTED = re.compile(r"(?<!\w)['\"`]([^'\"`\s]{1,40})['\"`]")


def _keep(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return 0 < len(value) <= MAX_TEXT and "\n" not in value
    return isinstance(value, int | float) and math.isfinite(value)


def _add(pool: list[Any], value: Any) -> None:
    if _keep(value) and value not in pool and len(pool) < MAX_POOL:
        pool.append(value)


def _add_recent(pool: list[Any], value: Any) -> None:
    """What an answer returned goes first: the value the latest call gave is the one the next call
    most likely needs (a branch just created, an id just minted); the oldest fall off the end."""
    if not _keep(value):
        return
    if value in pool:
        pool.remove(value)
    pool.insert(0, value)
    del pool[MAX_POOL:]


def command_line_values(argv: list[str] | tuple[str, ...], cwd: str = "") -> list[str]:
    """The values a target was started with (its flags' values and positional arguments), not the
    program, the interpreter's own flags, the script or `-m module`."""
    out: list[str] = []
    args = list(argv[1:])
    if argv and re.search(r"python[\d.]*$", argv[0].rsplit("/", 1)[-1]):
        while args and args[0].startswith("-") and args[0] != "-m":
            args.pop(0)
        if args[:1] == ["-m"]:
            args = args[2:]
        elif args:
            args = args[1:]  # the script
    for token in args:
        match = _FLAG_VALUE.match(token)
        value = match.group(1) if match else token
        if value.startswith("-") or "{" in value:
            continue
        _add(out, value)
        if cwd and not value.startswith("/") and "/" in value and not _URL.match(value):
            _add(out, f"{cwd.rstrip('/')}/{value}")
    return out


def schema_values(schema: Any) -> list[Any]:
    """The values a schema names itself: examples, default, const, enum, values its description
    quotes (`'local'`, `"remote"`), and the exact boundaries of its limits (a string of exactly minLength/maxLength, a number at each bound and just inside
    an exclusive one): where off-by-one bugs live."""
    if not isinstance(schema, dict):
        return []
    out: list[Any] = []
    for value in schema.get("examples", []) if isinstance(schema.get("examples"), list) else []:
        _add(out, value)
    for key in ("default", "const"):
        if key in schema:
            _add(out, schema[key])
    for value in schema.get("enum", []) if isinstance(schema.get("enum"), list) else []:
        _add(out, value)
    kinds = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if "string" in kinds and isinstance(schema.get("description"), str):
        for quoted in _QUOTED.findall(schema["description"][:2000]):  # "list local branches ('local')"
            _add(out, quoted)
    for key in ("minLength", "maxLength"):
        n = schema.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_TEXT and ("string" in kinds):
            _add(out, "a" * n)
    integer = "integer" in kinds
    for key, step in (("minimum", 0), ("maximum", 0), ("exclusiveMinimum", 1), ("exclusiveMaximum", -1)):
        n = schema.get(key)
        if isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n):
            value = n + step if integer else (n if not step else math.nextafter(n, n + step))
            _add(out, int(value) if integer and float(value).is_integer() else value)
    return out


def fits(value: Any, schema: Any) -> bool:
    """Whether `value` is of a type the schema allows (and in its enum): a cheap filter, not a
    validation. A value that passes here may still be refused; generation learns that."""
    if not isinstance(schema, dict):
        return True
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    kinds = schema.get("type")
    if kinds is None:
        return True
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if isinstance(value, str):
        return "string" in kinds
    if isinstance(value, bool):
        return "boolean" in kinds
    if isinstance(value, int):
        return "integer" in kinds or "number" in kinds
    if isinstance(value, float):
        return "number" in kinds or ("integer" in kinds and value.is_integer())
    return False


_TOKEN = re.compile(r"[A-Za-z0-9][\w./@:+-]{0,79}")
_WORD_ONLY = re.compile(r"[a-z]+")


def harvest_text(text: str, into: list[str], *, limit: int = 4000) -> None:
    """Identifier-like tokens of a text answer (names, ids, hashes, file names): each line's
    tokens that hold a digit, a separator or a capital, or that stand alone on their line (a
    branch list). Plain prose words are left out: they would crowd the pool."""
    found: list[str] = []
    for line in text[:limit].splitlines()[:200]:
        tokens = _TOKEN.findall(line)
        for token in tokens:
            token = token.rstrip(".:,")
            if token and (len(tokens) <= 2 or not _WORD_ONLY.fullmatch(token)) and token not in found:
                found.append(token)
    for token in reversed(found[:MAX_POOL]):  # this answer's tokens first, in their own order
        _add_recent(into, token)


def harvest(value: Any, into: dict[str, list[Any]], *, key: str = "", depth: int = 0) -> None:
    """Scalar leaves of a result, by the name of the field that held them: a later call's argument
    of the same name (calendarId, branch, path) is offered the value (a value flow across tools)."""
    if depth > 8:
        return
    if isinstance(value, dict):
        for k, v in list(value.items())[:100]:
            if isinstance(k, str) and k not in ("_meta", "resultType", "content", "type"):
                harvest(v, into, key=k, depth=depth + 1)
    elif isinstance(value, list):
        for item in value[:50]:
            harvest(item, into, key=key, depth=depth + 1)
    elif key and _keep(value):
        _add_recent(into.setdefault(key, []), value)


@dataclass(slots=True)
class ValueSources:
    """Every pool but the schema's (computed from each schema as it is met)."""

    command_line: list[str] = field(default_factory=list)
    user: dict[str, dict[str, list[Any]]] = field(default_factory=dict)  # tool ("*": any) -> arg -> values
    returned: dict[str, list[Any]] = field(default_factory=dict)  # result field name -> values seen
    literals: list[Any] = field(default_factory=list)  # the server's own source constants
    # identifier-like tokens of text results (a branch in "* main", a commit id in a log line),
    # offered to any string argument: text answers have no field names to match on
    returned_text: list[str] = field(default_factory=list)
    # the source's literals by the variable they are compared with (`kind == "agenda"`): an
    # argument of that name is offered its own first
    literal_names: dict[str, list[Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"command_line": self.command_line, "user": self.user, "returned": self.returned,
                "literals": self.literals, "returned_text": self.returned_text, "literal_names": self.literal_names}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ValueSources:
        data = data or {}
        return cls(list(data.get("command_line", [])), dict(data.get("user", {})),
                   dict(data.get("returned", {})), list(data.get("literals", [])),
                   list(data.get("returned_text", [])), dict(data.get("literal_names", {})))

    def candidates(self, tool: str, arg: str, schema: Any) -> list[tuple[str, Any]]:
        """(source, value) pairs offered for one argument, most specific source first; an array
        argument is offered one-element arrays of what its items would be offered."""
        if isinstance(schema, dict) and schema.get("type") == "array" and isinstance(schema.get("items"), dict):
            users = [("user", v) for scope in (tool, "*") for v in self.user.get(scope, {}).get(arg, [])]
            items = [(s, [v]) for s, v in self._scalar_candidates(tool, arg, schema["items"], users=False)]
            return users + items + [("schema", v) for v in schema_values(schema)]
        return self._scalar_candidates(tool, arg, schema)

    def _scalar_candidates(self, tool: str, arg: str, schema: Any, *, users: bool = True) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for scope in (tool, "*") if users else ():
            for value in self.user.get(scope, {}).get(arg, []):
                out.append(("user", value))
        if _PATHY.search(arg) or _URLY.search(arg):
            want_url = bool(_URLY.search(arg)) and not _PATHY.search(arg)
            fitting = [v for v in self.command_line if fits(v, schema) and bool(_URL.match(v)) == want_url]
            # a path argument is offered what looks like a path first (`--transport stdio` is not one)
            fitting.sort(key=lambda v: 0 if v.startswith("/") else 1 if "/" in v or "." in v else 2)
            out += [("command line", v) for v in fitting]
        out += [("returned", v) for v in self.returned.get(arg, []) if fits(v, schema)]
        if not _PATHY.search(arg) and not _URLY.search(arg):
            out += [("returned text", v) for v in self.returned_text if fits(v, schema)]
        out += [("schema", v) for v in schema_values(schema)]
        out += [("source literal", v) for v in self.literal_names.get(arg, []) if fits(v, schema)]
        out += [("source literal", v) for v in self.literals if fits(v, schema)]
        seen: set[Any] = set()
        unique = []
        for source, value in out:
            marker = (type(value).__name__, value)
            if marker not in seen:
                seen.add(marker)
                unique.append((source, value))
        return unique

    def preferred(self, tool: str, arg: str, schema: Any) -> Any:
        """The one value a minimal call uses: the user's, else the command line's, else a value a
        result returned for that name; None when no pool has one."""
        for source, value in self.candidates(tool, arg, schema):
            if source in ("user", "command line", "returned"):
                return value
        return None

    def argument(self, tool: str, arg: str, schema: Any, base: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        """Values for one argument: each pool with a candidate weighs as much as the schema's own
        generation (so three command-line values are not drowned by sixty tokens of a text
        answer), the user's first."""
        from hypothesis import strategies as st

        found = self.candidates(tool, arg, schema)
        if not found:
            return base
        by_source: dict[str, list[Any]] = {}
        for source, value in found:
            by_source.setdefault(source, []).append(value)
        pools = [st.sampled_from(by_source[s]) for s in SOURCES if s in by_source]
        return st.one_of(*pools, base)

    def attribute(self, tool: str, arguments: dict[str, Any], schemas: dict[str, Any] | None = None,
                  plain: Any = None) -> str:
        """Which pools the arguments of a successful call came from ("command line + source
        literal": each argument credited to the most specific pool holding its value), or
        "generated" when none. `plain(schema)`: the value a schema
        alone gives; an argument holding it is generated even when a pool happens to hold it too
        (the word a plain sample uses may also be in an answer)."""
        used: set[str] = set()
        for arg, value in arguments.items():
            schema = (schemas or {}).get(arg)
            if plain is not None and plain(schema) == value:
                continue
            found = [s for s, c in self.candidates(tool, arg, schema) if c == value and type(c) is type(value)]
            if found:  # each argument's value is credited to the most specific pool holding it
                used.add(found[0].replace("returned text", "returned"))
        return " + ".join(s for s in SOURCES if s in used) or "generated"
