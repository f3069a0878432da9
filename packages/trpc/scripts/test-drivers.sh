#!/usr/bin/env bash
# The driver matrix: tests/foundation/driver.test.ts (real PostgreSQL, and
# PgBouncer when /usr/sbin/pgbouncer is installed) against UNPATCHED
# postgres-js releases, each installed from the registry into a temporary
# directory; the app's own patched copy in node_modules is not touched.
# Which defects of patches/README.md each release still has is what fails;
# packages/trpc/docs/DRIVERS.md records the result and what it means.
#
#   npm run test:drivers -w @exactly-once/trpc [-- postgres@3.4.10 ...]
#
# Exits non-zero when a release fails a test; every release is run anyway.
set -uo pipefail
cd "$(dirname "$0")/../../.."
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.4.10 4.2.0)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for version in "${versions[@]}"; do
  version="${version#postgres@}"
  dir="$work/postgres-$version"
  mkdir -p "$dir"
  echo "== postgres@$version (unpatched)"
  if ! (cd "$dir" && npm init -y >/dev/null && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "postgres@$version" >/dev/null); then
    echo "could not install postgres@$version" >&2
    failed+=("$version (install)")
    continue
  fi
  # Its ESM entry, as the app imports it (3.x also ships CommonJS, which `main` names).
  entry="$(cd "$dir" && node --input-type=module -e 'console.log(new URL(import.meta.resolve("postgres")).pathname)')"
  if ! POSTGRES_DRIVER_ENTRY="$entry" npx --no-install vitest run -c packages/trpc/scripts/vitest.drivers.config.ts --reporter=verbose; then
    failed+=("$version")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "driver tests failed on: ${failed[*]}" >&2
  exit 1
fi
echo "driver tests passed on: ${versions[*]}"
