#!/usr/bin/env bash
# npm run example:test: the package as a user gets it. Packs
# @exactly-once/trpc once (its prepack builds it), copies each example
# (standalone, adapters) into a fresh temporary directory, side by side, with
# the tarball beside each, installs it there (its package.json names the
# tarball) and runs its test: on embedded PostgreSQL, or with DATABASE_URL in
# a database of its own there. The adapters' test takes its database from
# the standalone example's (installed beside it). The directory goes
# afterwards, whatever happened; each test stops what it starts.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd -P)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# As root, embedded PostgreSQL runs as the postgres user, which must reach its binaries in node_modules here.
chmod 755 "$work"

(cd "$repo/packages/trpc" && npm pack --pack-destination "$work" --silent >/dev/null)
for example in standalone adapters; do
  mkdir "$work/$example"
  tar -C "$repo/examples/$example" --exclude=node_modules -cf - . | tar -C "$work/$example" -xf -
  cp "$work"/exactly-once-trpc-*.tgz "$work/$example/"
  (cd "$work/$example" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
done
for example in standalone adapters; do
  echo "example:test: $example"
  (cd "$work/$example" && npm test)
done
