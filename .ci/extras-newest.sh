#!/usr/bin/env bash
# The hjs and hypofuzz extras on the newest Hypothesis: neither caps Hypothesis, so installing them
# must keep the Hypothesis the main .venv resolved, and both must then work on it (hjs through
# strategies/hjs_inputs.adapt_hjs, HypoFuzz through fuzz/hypothesis_compat.alias_slice_comments).
# A venv of its own because an installed HypoFuzz is imported by every `import hypothesis` (an
# entry point, about 0.2 s), which the main suite's many subprocesses should not pay.
# `-p no:locust`: Locust's pytest plugin would gevent-patch the test process (see README).
set -euo pipefail
cd "$(dirname "$0")/.."

newest="$(.venv/bin/python -c 'import hypothesis; print(hypothesis.__version__)')"
python3 -m venv .venv-extras
.venv-extras/bin/pip install --quiet -e ".[redis,hjs,hypofuzz]" pyyaml
here="$(.venv-extras/bin/python -c 'import hypothesis; print(hypothesis.__version__)')"
if [ "$here" != "$newest" ]; then
  echo "ci: the hjs and hypofuzz extras installed Hypothesis $here where the main venv has $newest" >&2
  exit 1
fi
.venv-extras/bin/python -m pytest -q -ra -p no:cacheprovider -p no:locust \
  tests/test_hypothesis_compat.py tests/test_strategies_hjs.py tests/test_strategies_hjs_pin.py \
  tests/test_fuzz_pytest_plugin.py tests/test_hypofuzz.py
