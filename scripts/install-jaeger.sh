#!/usr/bin/env bash
# Builds Jaeger v1.76.0's `jaeger` binary (the OpenTelemetry-collector-based Jaeger with an OTLP receiver, in-memory
# storage and the query API) into $GOBIN or ~/go/bin, for the tracing tests (test/adapters/tracing-jaeger.test.ts).
#
# `go install github.com/jaegertracing/jaeger/cmd/jaeger@v1.76.0` cannot work: the module's go.mod has a replace
# directive, which go install refuses. The same module version is downloaded and built with go build instead. The
# binary never calls out: the tests' configuration (harness/servers.ts) turns the collector's own telemetry off and
# binds every listener to loopback.
set -euo pipefail
VERSION=v1.76.0
BIN_DIR="${GOBIN:-$(go env GOPATH)/bin}"
BIN="$BIN_DIR/jaeger"
export DO_NOT_TRACK=1

works() { [ -x "$BIN" ] && "$BIN" version >/dev/null 2>&1; }

if works; then echo "jaeger already built: $BIN"; exit 0; fi

src=$(go mod download -json "github.com/jaegertracing/jaeger@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -d "$src" ] || { echo "could not download github.com/jaegertracing/jaeger@$VERSION" >&2; exit 1; }
mkdir -p "$BIN_DIR"
(cd "$src" && go build -trimpath -o "$BIN" ./cmd/jaeger)
works || { echo "built $BIN but it does not run" >&2; exit 1; }
echo "jaeger built from the module source: $BIN"
