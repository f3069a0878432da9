#!/usr/bin/env bash
# The package guide's "From an empty folder", as a new user follows it: an
# empty directory, `npm init`, the guide's install line (the tarball npm pack
# makes, and whatever versions of the peers the registry serves today), the
# guide's named snippets saved as they are, then migrate, serve, the
# client's deposit sent twice with one key (one row, the same answer twice),
# a changed amount (422) and a 20-way burst of one key (one row): on the
# postgres-js major npm picks today, then again on the newest 3.x, both
# without this repository's patch.
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
  [ -z "$server" ] || kill -- "-$server" 2>/dev/null || true
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

npx tsx migrate.ts

# One round on the postgres-js installed now: serve, the guide's client (one deposit sent twice with one key: one
# row, the same answer twice), then guide-checks.ts (a changed amount is a 422; a 20-way burst of a fresh key runs once).
round() {
  local version out rows ids checks
  version="$(node -p 'JSON.parse(fs.readFileSync("node_modules/postgres/package.json")).version')"
  # In a process group of its own (npx, tsx and node), so that one kill stops all of it and frees the port.
  setsid npx tsx main.ts >server.log 2>&1 &
  server=$!
  for _ in $(seq 1 60); do (echo >/dev/tcp/127.0.0.1/3000) 2>/dev/null && break; sleep 0.5; done
  out="$(npx tsx client.ts)"
  echo "$out"
  rows="$(psql -qtA "$DATABASE_URL" -c "select count(*) from deposits where account = 'acct_1'")"
  ids="$(printf '%s\n' "$out" | grep -o 'depositId: [0-9]*' | sort -u | wc -l)"
  if [ "$rows" != 1 ] || [ "$ids" != 1 ]; then
    echo "guide: FAIL on postgres $version: $rows rows in deposits, $ids distinct deposit ids in the answers" >&2
    cat server.log >&2
    exit 1
  fi
  checks="$(npx tsx "$repo/examples/guide-checks.ts")"
  echo "$checks"
  CHECKS="$checks" DATABASE_URL="$DATABASE_URL" node --input-type=module -e '
    import postgres from "postgres";
    const c = JSON.parse(process.env.CHECKS);
    const sql = postgres(process.env.DATABASE_URL, { max: 1 });
    const [{ n }] = await sql`select count(*)::int as n from deposits where key = ${c.key}`;
    const [{ m }] = await sql`select count(*)::int as m from deposits where account = ${"acct_guide"} and amount = 101`;
    await sql.end();
    const wrong = [];
    if (c.mismatch.join() !== "200,422") wrong.push(`the changed amount answered ${c.mismatch.join(" then ")}, not 200 then 422`);
    if (m !== 0) wrong.push(`the refused amount wrote ${m} row(s)`);
    if (n !== 1) wrong.push(`the burst wrote ${n} rows`);
    if (c.depositIds.length !== 1) wrong.push(`the burst answered ${c.depositIds.length} deposit ids`);
    if (c.statuses.some((s) => s !== 200 && s !== 409)) wrong.push(`the burst answered ${c.statuses.join(",")}`);
    if (wrong.length) { console.error(`guide: FAIL: ${wrong.join("; ")}`); process.exit(1); }
  ' || { cat server.log >&2; exit 1; }
  kill -- "-$server"
  wait "$server" 2>/dev/null || true
  server=""
  for _ in $(seq 1 40); do (echo >/dev/tcp/127.0.0.1/3000) 2>/dev/null || break; sleep 0.25; done
  if (echo >/dev/tcp/127.0.0.1/3000) 2>/dev/null; then echo "guide: the server on 3000 did not stop" >&2; exit 1; fi
  psql -q "$DATABASE_URL" -c "truncate deposits" >/dev/null
  echo "guide: on postgres $version, unpatched: one row and the same answer twice, a changed amount refused with 422, a 20-way burst ran once"
}

round
# The other major an adopter may have: the newest 3.x the registry serves, as npm installs it (no patch).
npm install --no-audit --no-fund "postgres@3" >install-3.log 2>&1 || { cat install-3.log >&2; exit 1; }
round
