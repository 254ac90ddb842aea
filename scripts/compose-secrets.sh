#!/bin/sh
# Creates the secrets compose.yaml reads, each a file in one directory (default ./secrets, which git and the image's
# build context leave out; PLANT_STORE_SECRETS or the first argument names another), with random passwords:
#   mongo_root_password  MongoDB's root user (the mongo service creates it on its first start; mongo-init uses it)
#   mongodb_uri          the service's MONGODB_URI: the application user plantstore, limited to the plantstore database
#   redis_url            the service's REDIS_URL: the Redis user plantstore
#   redis_acl            Redis's ACL file: the default (unauthenticated) user off, plantstore by its password's SHA-256
# Run it once before the first `docker compose up`: `sh scripts/compose-secrets.sh`. It never replaces a secret: with
# every file there it says so and exits 0; with some missing it stops (delete the directory and the stack's volumes,
# `docker compose down -v`, to start over: MongoDB keeps the users it was first given).
# The directory is private to you (0700); the files in it are 0644, so that the containers' own users (uid 999 for
# mongo and redis, 1000 for the service) can read the ones mounted into them.
set -eu
dir=${1:-${PLANT_STORE_SECRETS:-./secrets}}
files='mongo_root_password mongodb_uri redis_url redis_acl'

present=0
for f in $files; do [ -e "$dir/$f" ] && present=$((present + 1)); done
if [ "$present" -eq 4 ]; then
  echo "secrets: $dir already holds $files: kept"
  exit 0
fi
if [ "$present" -ne 0 ]; then
  echo "secrets: $dir holds some of $files but not all: delete it (and the stack's volumes) to create them anew" >&2
  exit 1
fi

# 32 random bytes as 64 hex digits: nothing to escape in a URI or an ACL rule.
random() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi | cut -d' ' -f1; }

umask 077
mkdir -p "$dir"
chmod 700 "$dir"
mongo_app=$(random)
redis_app=$(random)
random >"$dir/mongo_root_password"
echo "mongodb://plantstore:$mongo_app@mongo:27017/plantstore?replicaSet=rs0&w=majority" >"$dir/mongodb_uri"
echo "redis://plantstore:$redis_app@redis:6379" >"$dir/redis_url"
# The plantstore user may run what the service runs (no @dangerous command: no CONFIG, FLUSHALL, KEYS, DEBUG...; INFO
# is let through for the client's ready check) on its own keys and on the channel Redis reports token changes on.
cat >"$dir/redis_acl" <<ACL
user default off resetpass -@all
user plantstore on #$(printf '%s' "$redis_app" | sha256) resetkeys ~plantstore:* resetchannels &__redis__:invalidate -@all +@all -@dangerous +info
ACL
for f in $files; do chmod 644 "$dir/$f"; done
echo "secrets: created $files in $dir"
