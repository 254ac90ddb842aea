#!/usr/bin/env bash
# openapi-generator (pinned; the openapi-generator-cli jar from Maven Central, fetched with Maven) for the
# generated-clients test (test/http/generated-clients.test.ts), which generates a Python client with `-g python`. In a
# directory of its own, made where missing and reused while it works (delete the directory to throw it away), with a
# Python virtual environment holding what the generated client needs (its requirements.txt, pinned here).
# Needs Java 17 or later and Maven (installed from Debian where missing).
# Prints, on its last line, the directory (openapi-generator-cli-VERSION.jar, venv/bin/python).
set -euo pipefail
VERSION=7.25.0
REQUIREMENTS=(urllib3==2.8.0 python-dateutil==2.9.0.post0 pydantic==2.12.5 typing-extensions==4.15.0)
DIR="${PLANT_STORE_OPENAPI_GENERATOR_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/plant-store/openapi-generator-$VERSION}"
JAR="$DIR/openapi-generator-cli-$VERSION.jar"

works() {
  [ -s "$JAR" ] && java -jar "$JAR" version 2>/dev/null | grep -qx "$VERSION" &&
    "$DIR/venv/bin/python" -c 'import urllib3, dateutil, pydantic, typing_extensions' 2>/dev/null
}
if works; then
  echo "openapi-generator $VERSION already installed: $DIR" >&2
  echo "$DIR"
  exit 0
fi

if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "installing openjdk-17-jre-headless and maven (Debian)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null
fi
rm -rf "$DIR"
mkdir -p "$DIR"
mvn -q -B dependency:copy -Dartifact="org.openapitools:openapi-generator-cli:$VERSION" -DoutputDirectory="$DIR" >&2
if ! python3 -m venv "$DIR/venv" >&2; then
  echo "installing python3-venv (Debian)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  python3 -m venv "$DIR/venv" >&2
fi
"$DIR/venv/bin/python" -m pip install -q --disable-pip-version-check --no-input "${REQUIREMENTS[@]}" >&2
works || { echo "installed openapi-generator $VERSION into $DIR but it does not run" >&2; exit 1; }
echo "openapi-generator $VERSION installed: $DIR" >&2
echo "$DIR"
