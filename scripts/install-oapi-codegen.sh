#!/usr/bin/env bash
# oapi-codegen (Go, pinned, from the Go module proxy) for the generated-clients test (test/http/generated-clients.test.ts),
# in a directory of its own, made where missing and reused while it works (delete the directory to throw it away).
# Also a Go module template (go.mod and go.sum) requiring the pinned oapi-codegen runtime the generated client
# imports, with that runtime downloaded into the module cache: the test then builds offline (GOPROXY=off).
# Needs Go 1.24 or later on PATH (https://go.dev/dl/; Debian's golang-go is older).
# Prints, on its last line, the directory (bin/oapi-codegen, module/go.mod, module/go.sum).
set -euo pipefail
VERSION=v2.8.2
RUNTIME=v1.8.0
DIR="${PLANT_STORE_OAPI_CODEGEN_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/plant-store/oapi-codegen-$VERSION}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

works() {
  [ -x "$DIR/bin/oapi-codegen" ] && "$DIR/bin/oapi-codegen" -version 2>/dev/null | grep -q "$VERSION" &&
    [ -s "$DIR/module/go.sum" ] && (cd "$DIR/module" && GOPROXY=off go mod download >/dev/null 2>&1)
}
if ! command -v go >/dev/null 2>&1; then
  echo "go not found on PATH: oapi-codegen $VERSION needs Go 1.24 or later (https://go.dev/dl/)" >&2
  exit 1
fi
if works; then
  echo "oapi-codegen $VERSION already installed: $DIR" >&2
  echo "$DIR"
  exit 0
fi

rm -rf "$DIR"
mkdir -p "$DIR/bin" "$DIR/module"
GOBIN="$DIR/bin" go install "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@$VERSION" >&2
cd "$DIR/module"
printf 'module plantsclient\n\ngo 1.24\n\nrequire github.com/oapi-codegen/runtime %s\n' "$RUNTIME" >go.mod
printf 'package main\n\nimport _ "github.com/oapi-codegen/runtime"\n\nfunc main() {}\n' >main.go
go mod tidy >&2
rm main.go
# tidy fetches the modules' .mod and .zip files only; `go mod download` also fetches their .info files, without which
# the offline check below (and the test's GOPROXY=off build) fails with "module lookup disabled" on a fresh machine.
go mod download >&2
cd - >/dev/null
works || { echo "installed oapi-codegen $VERSION into $DIR but it does not run" >&2; exit 1; }
echo "oapi-codegen $VERSION installed: $DIR" >&2
echo "$DIR"
