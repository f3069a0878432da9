#!/usr/bin/env bash
# npm run example:test: the package as a user gets it. Packs
# @exactly-once/trpc (its prepack builds it), copies examples/standalone into
# a fresh temporary directory with the tarball beside it, installs it there
# (its package.json names the tarball) and runs its test: on embedded
# PostgreSQL, or with DATABASE_URL in a database of its own there. The
# directory goes afterwards, whatever happened; the test stops what it starts.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd -P)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# As root, embedded PostgreSQL runs as the postgres user, which must reach its binaries in node_modules here.
chmod 755 "$work"

tar -C "$repo/examples/standalone" --exclude=node_modules -cf - . | tar -C "$work" -xf -
(cd "$repo/packages/trpc" && npm pack --pack-destination "$work" --silent >/dev/null)
cd "$work"
npm install --no-audit --no-fund --no-package-lock --loglevel=error
npm test
