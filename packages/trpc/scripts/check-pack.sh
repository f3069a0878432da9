#!/usr/bin/env bash
# Package hygiene, on the tarball `npm pack` makes (what a user installs):
# publint, Are the Types Wrong (ESM-only on purpose: the esm-only profile
# leaves out CommonJS `require`, which this package does not offer), and the
# file list: built output, the SQL migrations, README, CHANGELOG, LICENSE,
# docs/DRIVERS.md, nothing else (no test, fixture, source or app file).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# prepack builds dist/ first.
npm pack --pack-destination "$out" >/dev/null
tarball="$(ls "$out"/*.tgz)"

tar -tzf "$tarball" | sed 's#^package/##' | sort > "$out/files"
allowed='^(package\.json|README\.md|CHANGELOG\.md|LICENSE|docs/DRIVERS\.md|migrations/[0-9]{4}_[a-z_]+\.sql|dist/([a-z-]+/)?[a-z-]+\.(js|d\.ts))$'
unexpected="$(grep -vE "$allowed" "$out/files" || true)"
tests="$(grep -Ei '(^|/)(test|tests|fixtures?|__tests__)/|\.(test|spec)\.|fixture' "$out/files" || true)"
if [ -n "$unexpected$tests" ]; then
  echo "FAIL: the tarball holds files it must not:" >&2
  printf '%s\n' "$unexpected" "$tests" | sort -u | sed '/^$/d' >&2
  exit 1
fi
if ! grep -qx LICENSE "$out/files"; then
  echo "FAIL: the tarball has no LICENSE: nobody may use a package without one" >&2
  exit 1
fi
for doc in docs/DRIVERS.md; do
  if ! grep -qxF "$doc" "$out/files"; then
    echo "FAIL: the tarball has no $doc: the README sends adopters to it" >&2
    exit 1
  fi
done
echo "tarball: $(wc -l < "$out/files") files, only built output, migrations, docs and the license"

npx --no-install publint run "$tarball" --strict
npx --no-install attw "$tarball" --profile esm-only --no-emoji --no-color
