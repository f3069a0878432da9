#!/usr/bin/env bash
# The package's own suite (npm test -w @exactly-once/trpc) against UNPATCHED
# postgres-js releases, each installed from the registry into a temporary
# directory (the repository's patched copy in node_modules is not touched):
# by default the newest 3.4.x and the newest 4.x the registry serves today.
#
#   npm run test:matrix -w @exactly-once/trpc [-- postgres@3.4.10 postgres@4.2.0 ...]
#
# Exits non-zero when a release fails; every release is run anyway.
set -uo pipefail
cd "$(dirname "$0")/.."
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("~3.4" "4")

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
passed=()
for wanted in "${versions[@]}"; do
  wanted="${wanted#postgres@}"
  dir="$work/postgres-$(printf %s "$wanted" | tr -c 'A-Za-z0-9.\n' _)"
  mkdir -p "$dir"
  if ! (cd "$dir" && npm init -y >/dev/null && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "postgres@$wanted" >/dev/null); then
    echo "could not install postgres@$wanted" >&2
    failed+=("$wanted (install)")
    continue
  fi
  version="$(node -p "require('$dir/node_modules/postgres/package.json').version")"
  echo "== postgres@$version (unpatched, for postgres@$wanted)"
  entry="$(cd "$dir" && node --input-type=module -e 'console.log(new URL(import.meta.resolve("postgres")).pathname)')"
  if POSTGRES_DRIVER_ENTRY="$entry" npx --no-install vitest run; then
    passed+=("$version")
  else
    failed+=("$version")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "the package's tests failed on: ${failed[*]} (passed on: ${passed[*]:-none})" >&2
  exit 1
fi
echo "the package's tests passed on postgres-js ${passed[*]}, unpatched"
