/**
 * `idempotency_keys{state}` and the database gauges, refreshed when scraped:
 * the pool's at every scrape (read from memory), the keys' at most once
 * every few seconds, however many scrapers ask: never per request. The key
 * query reads in-progress rows only (through the state index); completed
 * keys, the millions, are never counted.
 */
import type { Sql } from "postgres";
import { availability } from "../../db/availability";
import type { Database } from "../../db/client";
import { isExpired, isStale, KeyState, needsAttention } from "@exactly-once/trpc";
import { metrics } from "./metrics";

const KEY_STATES_REFRESH_MS = 5_000;

/** The app's one pool; the conventions require a pool name. */
const POOL = { db_client_connection_pool_name: "app" };

type KeyStateCounts = { in_progress: number; stale: number; needs_attention: number };

async function countKeyStates(q: Sql): Promise<KeyStateCounts> {
  const [row] = await q<KeyStateCounts[]>`
    select count(*) filter (where not ${isExpired(q, "k")})::int as in_progress,
           count(*) filter (where ${isStale(q, "k")})::int as stale,
           count(*) filter (where ${needsAttention(q, "k")})::int as needs_attention
    from idempotency_keys k where k.state = ${KeyState.InProgress}`;
  return row ?? { in_progress: 0, stale: 0, needs_attention: 0 };
}

const holder = globalThis as { __eoKeyStates?: { at: number; running?: Promise<void> } };

/** Brings the gauges up to date unless they are younger than KEY_STATES_REFRESH_MS. */
export async function refreshKeyStates({ sql, held }: Pick<Database, "sql" | "held">, now = Date.now()): Promise<void> {
  const m = metrics();
  const up = availability().databaseUp;
  m.dbUp.set(up ? 1 : 0);
  m.dbPoolMax.set(POOL, sql.options.max);
  m.dbPoolConnections.set({ ...POOL, db_client_connection_state: "used" }, held());
  // With the database away the key counts cannot be read (db_up says so); the scrape still answers at once.
  if (!up) return;
  const state = (holder.__eoKeyStates ??= { at: 0 });
  if (state.running) return state.running;
  if (now - state.at < KEY_STATES_REFRESH_MS) return;
  state.running = countKeyStates(sql)
    .then((counts) => {
      for (const [name, value] of Object.entries(counts)) m.keys.set({ state: name }, value);
      state.at = now;
    })
    // A database that is away is what db_up says; the key gauges keep their last value.
    .catch(() => m.dbUp.set(0))
    .finally(() => (state.running = undefined));
  return state.running;
}
