#!/usr/bin/env bash
# Builds FerretDB v1.24.2 (MongoDB wire protocol over SQLite) into $GOBIN or ~/go/bin, for the storage tests.
#
# `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` is tried first. Where it cannot finish (the Go
# module proxy may refuse the module's version list, which go install reads for its deprecation check; and a
# binary whose main module is FerretDB panics at start without the generated build/version/version.txt that the
# module zip does not ship), the same module version is downloaded, copied, given that file as FerretDB's own
# panic message says, and built with go build.
set -euo pipefail
VERSION=v1.24.2
BIN_DIR="${GOBIN:-$(go env GOPATH)/bin}"
BIN="$BIN_DIR/ferretdb"
export DO_NOT_TRACK=1

works() { [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; }

if works; then echo "ferretdb already built: $BIN"; exit 0; fi

if go install "github.com/FerretDB/FerretDB/cmd/ferretdb@$VERSION" 2>/dev/null && works; then
  echo "ferretdb installed with go install: $BIN"; exit 0
fi

src=$(go mod download -json "github.com/FerretDB/FerretDB@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -d "$src" ] || { echo "could not download github.com/FerretDB/FerretDB@$VERSION" >&2; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
echo "$VERSION" > "$work/build/version/version.txt"
mkdir -p "$BIN_DIR"
(cd "$work" && go build -o "$BIN" ./cmd/ferretdb)
works || { echo "built $BIN but it does not run" >&2; exit 1; }
echo "ferretdb built from the module source: $BIN"
