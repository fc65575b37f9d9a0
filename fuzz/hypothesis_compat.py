"""Every Hypothesis internal mcp-tempest touches, in one place.

Why: the campaign needs a few things Hypothesis does not offer publicly (the choice sequence of the
running example as a cache key, the failure blob a replay decodes, a shrink-time limit per property,
a per-target database key and a seed that keeps the example database on). Hypothesis may rename
any of them in a patch release; with all of them here, `tests/test_hypothesis_compat.py` checks
each on the installed Hypothesis and fails loudly, naming what moved, instead of a campaign
silently shrinking for ever or sharing one database key across targets.

The supported range is pyproject.toml's (`hypothesis>=6.140.2`); CI runs the lowest and newest.
One bridge lives elsewhere: strategies/hjs_inputs.adapt_hjs gives hypothesis-jsonschema the
`many.more()` it expects (strategies may not import fuzz; tests/test_strategies_hjs_pin.py checks it).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis.control import current_build_context
from hypothesis.core import encode_failure
from hypothesis.database import ExampleDatabase, choices_from_bytes, choices_to_bytes
from hypothesis.internal.conjecture import engine as _engine

__all__ = [
    "ExampleDatabase", "check_internals", "choices_to_bytes", "current_build_context", "draw_from_choices",
    "encode_failure", "end_generation", "running_phase", "set_database_key", "set_seed", "shrink_time_limit",
    "prime_unicode_tables", "skip_local_constants",
]

# Attribute names Hypothesis reads from a test function (what @seed sets; what `given` hashes into
# the database key besides the function's own source).
_SEED_ATTR = "_hypothesis_internal_use_seed"
_DIGEST_ATTR = "_hypothesis_internal_add_digest"


def set_database_key(body: Callable[..., Any], digest: bytes) -> None:
    """Key the example database by `digest` too, so workers and later campaigns on one target share it."""
    setattr(body, _DIGEST_ATTR, digest)


def set_seed(test: Callable[..., Any], seed: int) -> None:
    """What `@seed` sets, without `@seed`'s side effect of switching the example database off."""
    setattr(test, _SEED_ATTR, seed)


@contextlib.contextmanager
def shrink_time_limit(seconds: float) -> Iterator[None]:
    """Bound Hypothesis' shrinking of one test to `seconds` (whole seconds, at least 1), then restore."""
    old = _engine.MAX_SHRINKING_SECONDS
    _engine.MAX_SHRINKING_SECONDS = max(int(seconds), 1)
    try:
        yield
    finally:
        _engine.MAX_SHRINKING_SECONDS = old


def _running_engine() -> Any:
    """The ConjectureRunner whose call is on the stack (the one running the current example)."""
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, _engine.ConjectureRunner):
            return candidate
        frame = frame.f_back
    return None


def running_phase(cache: list[Any]) -> str:
    """The phase the engine running this example is in ("reuse", "generate", "target", "shrink").
    Hypothesis does not tell a test which phase calls it, and the campaign's budget counts generated
    examples apart from shrinking and replays. `cache` (one slot) keeps the engine between calls."""
    if not cache or cache[0] is None:
        cache[:] = [_running_engine()]
    runner = cache[0]
    return str(getattr(runner, "_current_phase", "generate")) if runner is not None else "generate"


def end_generation(cache: list[Any]) -> None:
    """Make the engine leave its generate phase for shrinking now (it keeps generating for up to
    10 s after a first failure, which a budget cannot afford)."""
    runner = cache[0] if cache else None
    if runner is not None and hasattr(runner, "first_bug_found_time"):
        runner.first_bug_found_time = -math.inf


def draw_from_choices(strategy: Any, blob: bytes) -> tuple[Any, tuple[Any, ...]] | None:
    """The value `strategy` draws from a stored choice sequence (the reach corpus's entries, saved
    with choices_to_bytes), and the choices it used; None when the sequence no longer fits the
    strategy (the target's surface changed since it was saved)."""
    from hypothesis.errors import StopTest
    from hypothesis.internal.conjecture.data import ConjectureData, Status

    choices = choices_from_bytes(blob)
    if choices is None:
        return None
    from hypothesis.control import BuildContext

    data = ConjectureData.for_choices(choices)
    try:
        with BuildContext(data, is_final=False, wrapped_test=draw_from_choices):  # composite strategies need one
            value = data.draw(strategy)
    except (StopTest, Exception):  # noqa: BLE001 - an entry that no longer draws is skipped, never an error
        return None
    if data.status == Status.INVALID:
        return None
    return value, tuple(data.choices)


def _unicode_tables() -> Path:
    from hypothesis.configuration import storage_directory

    folder: Any = storage_directory("unicode_data", unicodedata.unidata_version, intent_to_write=False)
    return Path(getattr(folder, "path", folder))  # a Path before 6.150, an object with .path since


def prime_unicode_tables(timeout: float = 120.0) -> bool:
    """Have Hypothesis's table of the characters UTF-8 can encode made by a process of its own
    when the storage folder (`.hypothesis/` where the campaign runs) does not hold it yet.

    Why: `st.text()` needs it, and Hypothesis makes it by trying every code point, a list of
    1.1 million pairs: about 180 MB on top of the harness, once, in every fresh checkout or CI
    workspace (a default campaign on the reference server peaked at 340 MB instead of 217).
    Made in a child, the harness only reads the file. Whether the table is there afterwards."""
    try:
        tables = _unicode_tables()
        if any(tables.glob("codec-*utf-8.json.gz")):
            return True
        env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(tables.parent.parent)}
        subprocess.run([sys.executable, "-c", "from hypothesis.internal.charmap import intervals_from_codec\n"
                        "intervals_from_codec('utf-8')"], env=env, capture_output=True, timeout=timeout,
                       check=False)
        return any(tables.glob("codec-*utf-8.json.gz"))
    except (ImportError, AttributeError, TypeError, OSError, subprocess.SubprocessError):
        return False  # Hypothesis makes it in-process when first needed, as without this


def skip_local_constants() -> bool:
    """Keep Hypothesis from drawing values out of the source of the modules loaded so far (its
    "local constants": every module outside site-packages, so mcp-tempest itself when installed
    editable, never when installed from a wheel). Why: an editable checkout (CI, a developer's)
    then generated from mcp-tempest's own literals, unlike the same seed from the wheel, and its
    first run in a folder without `.hypothesis/` parsed every one of those modules: a campaign
    against an endless cursor went from 184 to 370 MB. Whether it took."""
    try:
        from hypothesis.internal.conjecture import providers

        seen, scan = providers._seen_modules, providers._get_local_constants
        providers._sys_modules_len  # noqa: B018 - present, or the scan is not this one
    except (ImportError, AttributeError):
        return False
    modules = list(sys.modules.values())
    if "id(module)" in inspect.getsource(scan):  # newer releases keep ids, older ones the modules
        seen.update(id(m) for m in modules)
    else:
        seen.update(modules)
    providers._sys_modules_len = len(sys.modules)
    return True


def check_internals() -> list[str]:
    """What is missing or changed on the installed Hypothesis; empty when everything above works.

    Exercises each internal for real (a tiny seeded test with a digest), not only its name.
    """
    problems: list[str] = []
    init_source = inspect.getsource(_engine.ConjectureRunner.__init__)
    if "_current_phase" not in init_source:  # first_bug_found_time is optional: end_generation checks it
        problems.append("ConjectureRunner no longer sets _current_phase (the campaign reads the running phase)")
    if not isinstance(getattr(_engine, "MAX_SHRINKING_SECONDS", None), int):
        problems.append("hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS is gone or not an int")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    seen: list[tuple[bytes, bool, str]] = []

    @settings(max_examples=3, database=None, deadline=None)
    @given(st.integers(0, 10))
    def probe(value: int) -> None:
        build = current_build_context()
        choices = build.data.choices
        seen.append((choices_to_bytes(choices), bool(build.is_final), encode_failure(choices).decode("ascii")))

    set_seed(probe, 1)
    try:
        with shrink_time_limit(2):
            probe()
            first, seen[:] = list(seen), []
            probe()
    except Exception as exc:  # noqa: BLE001 - any failure here is a changed internal
        problems.append(f"running a seeded test through the internals failed: {type(exc).__name__}: {exc}")
        return problems
    if not seen:
        problems.append("the probe test ran no example")
    elif not all(isinstance(k, bytes) and blob for k, _, blob in seen):
        problems.append("choices_to_bytes / encode_failure no longer return bytes")
    if [k for k, _, _ in first] != [k for k, _, _ in seen]:
        problems.append(f"{_SEED_ATTR} no longer makes a test's examples repeat")
    if _database_keys(b"a") == _database_keys(b"b"):
        problems.append(f"{_DIGEST_ATTR} no longer changes the example database key")
    if not _skips_local_constants():
        problems.append("skip_local_constants no longer keeps Hypothesis from scanning loaded modules for constants")
    drawn = draw_from_choices(st.integers(0, 10), first[0][0]) if first else None
    if drawn is None or not isinstance(drawn[0], int):
        problems.append("ConjectureData.for_choices / choices_from_bytes no longer replay a stored choice sequence")
    return problems


def _skips_local_constants() -> bool:
    """skip_local_constants, exercised: afterwards no loaded module is scanned."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return False
    if not skip_local_constants():
        return False
    scanned: list[Any] = []
    real = providers.constants_from_module

    def counted(module: Any, **kw: Any) -> Any:
        scanned.append(module)
        return real(module, **kw)

    providers.constants_from_module = counted
    try:
        providers._get_local_constants()
    finally:
        providers.constants_from_module = real
    return not scanned


def _database_keys(digest: bytes) -> set[bytes]:
    """The keys a failing test saves under when keyed by `digest` (same source, different digest)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.database import InMemoryExampleDatabase

    db = InMemoryExampleDatabase()

    def body(value: int) -> None:
        raise ValueError(value)

    set_database_key(body, digest)
    test = settings(database=db, max_examples=1, deadline=None, phases=(Phase.generate,),
                    suppress_health_check=list(HealthCheck), print_blob=False)(given(st.integers())(body))
    with contextlib.suppress(ValueError):
        test()
    return set(db.data)


HYPOTHESIS_VERSION = hypothesis.__version__


# --- HypoFuzz (the `hypofuzz` extra), only when it is running this process ---

HYPOFUZZ_CHUNK_NOTE = (
    "a HypoFuzz 25.x worker tells the hub which tests it still fuzzes only after a chunk of 100 "
    "examples, and the hub, 60 s after start, exits when no worker has told it anything"
)


def in_hypofuzz_run() -> bool:
    """True when HypoFuzz (`hypothesis fuzz`) runs this process: its public `in_hypofuzz_run()`.
    Merely installed HypoFuzz is imported by every Hypothesis (an entry point), so presence is not enough."""
    detection = sys.modules.get("hypofuzz.detection")
    check = getattr(detection, "in_hypofuzz_run", None)
    return bool(check()) if callable(check) else False


HYPOFUZZ_PROFILE = "mcp-tempest-hypofuzz"


def fuzzable_profile_under_hypofuzz() -> str | None:
    """Under HypoFuzz, replace a derandomized active profile with a random one that has a database.

    Why: Hypothesis loads its "ci" profile by itself wherever CI=true (GitHub Actions, our .ci/run),
    and that profile sets derandomize=True and database=None; HypoFuzz skips every such test
    ("sets_derandomize") and exits with "no Hypothesis tests found". A fuzzer is randomness plus a
    corpus, so under HypoFuzz we keep the active profile's other settings and only take
    derandomize and the database from Hypothesis' own "default" profile. Returns the name of the
    profile loaded, or None when nothing needed changing (not under HypoFuzz, or already random).
    """
    if not in_hypofuzz_run():
        return None
    from hypothesis import settings

    active = settings.default
    if active is None or not active.derandomize:
        return None
    settings.register_profile(HYPOFUZZ_PROFILE, parent=active, derandomize=False,
                              database=settings.get_profile("default").database)
    settings.load_profile(HYPOFUZZ_PROFILE)
    return HYPOFUZZ_PROFILE


def alias_slice_comments() -> bool:
    """Let HypoFuzz 25.11.1 carry its explain-phase comments on a Hypothesis that renamed them.

    Why: after shrinking a failure, HypoFuzz copies `shrink_target.slice_comments` onto the data
    it replays; Hypothesis 6.157.1 renamed the field `span_comments`, so on any newer Hypothesis
    the worker dies with AttributeError at its first failure and the hub never hears of it.
    Capping Hypothesis in the extra would downgrade our users' Hypothesis to install HypoFuzz; a
    read-and-write alias on the two classes, added only where the old name is missing, keeps the
    comments and changes nothing that Hypothesis itself reads. Returns whether the alias is in place.
    """
    from dataclasses import fields, is_dataclass

    from hypothesis.internal.conjecture.data import ConjectureData, ConjectureResult

    if hasattr(ConjectureResult, "slice_comments"):
        return True
    names = {f.name for f in fields(ConjectureResult)} if is_dataclass(ConjectureResult) else set()
    if "span_comments" not in names or "slice_comments" in names:
        return False  # the old name is a real field (older Hypothesis) or both moved: leave it alone

    def get(self: Any) -> Any:
        return self.span_comments

    def put(self: Any, value: Any) -> None:
        self.span_comments = value

    ConjectureResult.slice_comments = property(get)  # type: ignore[attr-defined]
    ConjectureData.slice_comments = property(get, put)  # type: ignore[attr-defined]
    return True


def publish_hypofuzz_targets_early() -> bool:
    """Make a HypoFuzz worker report its live tests as soon as it has them, not after 100 examples.

    Why: our properties spawn servers, so 100 examples take minutes; the hub's first check comes
    after 60 s, finds every worker's list still empty, and exits saying "Found a failing input for
    every test!" with nothing found (`HYPOFUZZ_CHUNK_NOTE`). Wrapping the worker's
    `_update_targets` to publish `valid_nodeids` right away keeps the hub's own rule (exit once
    every test has failed) and removes only the start-up race. Returns False when HypoFuzz is not
    running here or its worker no longer looks the way this expects (then nothing is changed).
    """
    import sys

    module = sys.modules.get("hypofuzz.hypofuzz")
    worker = getattr(module, "FuzzWorker", None)
    original = getattr(worker, "_update_targets", None)
    if worker is None or original is None or not isinstance(getattr(worker, "valid_targets", None), property):
        return False
    if getattr(original, "_mcp_tempest_early", False):
        return True

    def _update_targets(self: Any, nodeids: Any) -> None:
        original(self, nodeids)
        state = getattr(self, "shared_state", None)
        if state is not None:
            state["worker_state"]["valid_nodeids"] = [t.nodeid for t in self.valid_targets]

    _update_targets._mcp_tempest_early = True  # type: ignore[attr-defined]
    worker._update_targets = _update_targets
    return True
