#!/usr/bin/env bash
# The kit as someone outside this repository gets it: the tarball `npm pack`
# makes holds only the bin, the built output, README and LICENSE; publint and
# Are the Types Wrong pass on it; and in an empty folder
# `npx --package=<tarball> exactly-once-check` runs its whole plan against a
# correct Idempotency-Key endpoint (the test gallery's, without a flaw) and
# exits 0 — no checkout, no tsx, no build step.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
gallery=""
cleanup() {
  if [ -n "$gallery" ]; then kill "$gallery" 2>/dev/null || true; fi
  rm -rf "$out"
}
trap cleanup EXIT
# prepack builds dist/ first.
npm pack --pack-destination "$out" >/dev/null
tarball="$(ls "$out"/*.tgz)"

tar -tzf "$tarball" | sed 's#^package/##' | sort > "$out/files"
allowed='^(package\.json|README\.md|LICENSE|bin/exactly-once-check\.js|dist/([a-z-]+/)?[a-z-]+\.(js|d\.ts))$'
unexpected="$(grep -vE "$allowed" "$out/files" || true)"
if [ -n "$unexpected" ]; then
  echo "FAIL: the tarball holds files it must not:" >&2
  echo "$unexpected" >&2
  exit 1
fi
for file in LICENSE bin/exactly-once-check.js dist/cli.js dist/index.d.ts; do
  if ! grep -qxF "$file" "$out/files"; then
    echo "FAIL: the tarball has no $file" >&2
    exit 1
  fi
done
echo "tarball: $(wc -l < "$out/files") files, only the bin, built output, README and the license"

npx --no-install publint run "$tarball" --strict
npx --no-install attw "$tarball" --profile esm-only --no-emoji --no-color

# A correct endpoint to check, in a process of its own; it prints its URL once it listens.
node --import tsx -e '
  const { startGalleryServer } = await import("./test/gallery.ts");
  const server = await startGalleryServer({ ttlMs: 1000 });
  console.log(server.url);
  process.on("SIGTERM", () => process.exit(0));
' > "$out/gallery-url" &
gallery=$!
for _ in $(seq 1 100); do
  if [ -s "$out/gallery-url" ]; then break; fi
  sleep 0.1
done
url="$(head -n 1 "$out/gallery-url")"
if [ -z "$url" ]; then
  echo "FAIL: the gallery server did not start" >&2
  exit 1
fi

mkdir "$out/empty"
cd "$out/empty"
npx --yes --package="$tarball" exactly-once-check "$url" \
  --data '{"amount":"1.00","currency":"EUR","destination":"acct_test_123"}' \
  -H "Authorization: Bearer one" --other-header "Authorization: Bearer two" \
  --count-url "${url}" --ttl 1 --burst 5
echo "npx --package=<tarball> exactly-once-check: every check passed from an empty folder"
