#!/usr/bin/env bash
# openapi-python-client (PyPI, pinned) for the generated-clients test (test/http/generated-clients.test.ts): in a
# virtual environment of its own, made where missing and reused while it works (delete the directory to throw it away).
# The generated client needs httpx and attrs, which the generator itself depends on, so the same environment runs it.
# Prints, on its last line, the environment's bin directory (python, openapi-python-client, ruff).
set -euo pipefail
VERSION=0.29.1
DIR="${PLANT_STORE_OPENAPI_PYTHON_CLIENT_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/plant-store/openapi-python-client-$VERSION}"
BIN="$DIR/bin"

works() {
  [ -x "$BIN/openapi-python-client" ] && "$BIN/openapi-python-client" --version 2>/dev/null | grep -q "$VERSION" &&
    "$BIN/python" -c 'import httpx, attrs' 2>/dev/null
}
if works; then
  echo "openapi-python-client $VERSION already installed: $BIN" >&2
  echo "$BIN"
  exit 0
fi

rm -rf "$DIR"
if ! python3 -m venv "$DIR" >&2; then
  echo "installing python3-venv (Debian)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  python3 -m venv "$DIR" >&2
fi
"$BIN/python" -m pip install -q --disable-pip-version-check --no-input "openapi-python-client==$VERSION" >&2
works || { echo "installed openapi-python-client $VERSION into $DIR but it does not run" >&2; exit 1; }
echo "openapi-python-client $VERSION installed: $BIN" >&2
echo "$BIN"
