#!/usr/bin/env bash
# The lowest allowed versions: install every lower bound of pyproject.toml (.ci/constraints-lowest.txt)
# into a second venv, .venv-lowest, and run a fast subset there, so that the ranges we declare are
# ranges we have run. This venv also carries the hjs and hypofuzz extras, so their tests run on the
# lowest Hypothesis here as .ci/extras-newest.sh runs them on the newest.
# `-p no:locust`: Locust's pytest plugin would gevent-patch the test process (see README).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv-lowest
.venv-lowest/bin/pip install --quiet -c .ci/constraints-lowest.txt -e ".[redis,hjs,hypofuzz]" pyyaml
# The subset is what the lower bounds could break (283 tests, ~3.5 min of CPU): the Hypothesis internals,
# strategies (ours and hypothesis-jsonschema's), the oracle (jsonschema, pydantic, mcp-types), a
# campaign's basics (zero findings on the reference, a filed finding, shared database), replay and
# generated regression tests, the pytest plugin, HypoFuzz, the Redis client, load gates.
.venv-lowest/bin/python -m pytest -q -ra -p no:cacheprovider -p no:locust \
  tests/test_hypothesis_compat.py tests/test_dependencies.py \
  --deselect tests/test_dependencies.py::test_installing_mcp_tempest_keeps_a_newer_hypothesis_than_the_old_pin \
  tests/test_strategies_hjs.py tests/test_strategies_hjs_pin.py tests/test_strategies_schema.py \
  tests/test_oracle_rules.py tests/test_load_gates.py tests/test_fuzz_replay.py \
  tests/test_fuzz_properties.py \
  "tests/test_fuzz_campaign.py::test_reference_server_has_no_findings_over_every_property_and_both_transports" \
  "tests/test_fuzz_campaign.py::test_a_finding_is_filed_with_its_files" \
  "tests/test_fuzz_campaign.py::test_workers_share_the_example_database" \
  tests/test_fuzz_pytest_plugin.py tests/test_hypofuzz.py \
  "tests/test_redis_database.py::test_writes_made_while_redis_is_down_land_when_it_is_back"
