#!/usr/bin/env bash
# The package guide's "From an empty folder", as a new user follows it: an
# empty directory, `npm init`, the guide's install line (the tarball npm pack
# makes, and whatever versions of the peers the registry serves today), the
# guide's named snippets saved as they are, then migrate, serve, and the
# client's deposit sent twice with one key: one row, the same answer twice.
# On DATABASE_URL's server in a database of its own (dropped after), else on
# the machine's PostgreSQL at 127.0.0.1:5432.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd -P)"
guide="$repo/packages/trpc/README.md"
work="$(mktemp -d)"
server=""
base="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="guide_$$"
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  [ -z "$server" ] || wait "$server" 2>/dev/null || true
  psql -q "$base" -c "drop database if exists $db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$repo/packages/trpc" && npm pack --pack-destination "$work" --silent >/dev/null)
tarball="$(ls "$work"/exactly-once-trpc-*.tgz)"
psql -q "$base" -c "create database $db" >/dev/null
export DATABASE_URL="${base%/*}/$db"

# A fenced block of the guide: the Nth `sh` block of a section, or the `ts` block titled NAME.
block() { awk -v want="$1" '
  /^```/ && open { open = 0; next }
  /^```ts title=/ { open = (substr($0, 13) == want); next }
  open { print }' "$guide"; }
shell() { awk -v section="$1" -v nth="$2" '
  /^## / { inside = ($0 == "## " section); next }
  inside && /^```sh$/ { n++; open = (n == nth); next }
  /^```/ { open = 0; next }
  open { print }' "$guide"; }

mkdir "$work/deposits"
cd "$work/deposits"
# The install block as written, but for the tarball's place and the database chosen above.
shell "From an empty folder" 1 | grep -v '^mkdir\|^export DATABASE_URL' | sed "s#/tmp/exactly-once-trpc-0.1.0.tgz#$tarball#" >install.sh
bash -e install.sh >install.log 2>&1 || { cat install.log >&2; exit 1; }
for file in migrate.ts server.ts main.ts client.ts; do block "$file" >"$file"; [ -s "$file" ] || { echo "guide: no block titled $file" >&2; exit 1; }; done
echo "guide: installed postgres $(node -p 'JSON.parse(fs.readFileSync("node_modules/postgres/package.json")).version')"

npx tsx migrate.ts
npx tsx main.ts >server.log 2>&1 &
server=$!
for _ in $(seq 1 60); do (echo >/dev/tcp/127.0.0.1/3000) 2>/dev/null && break; sleep 0.5; done
out="$(npx tsx client.ts)"
echo "$out"
rows="$(psql -qtA "$DATABASE_URL" -c 'select count(*) from deposits')"
ids="$(printf '%s\n' "$out" | grep -o 'depositId: [0-9]*' | sort -u | wc -l)"
if [ "$rows" != 1 ] || [ "$ids" != 1 ]; then
  echo "guide: FAIL: $rows rows in deposits, $ids distinct deposit ids in the answers" >&2
  cat server.log >&2
  exit 1
fi
echo "guide: one row, the same answer twice"
