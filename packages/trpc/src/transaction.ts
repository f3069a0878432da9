/**
 * A reserved connection inside a transaction, rolled back and released
 * whatever happens. Statements are pipelined with BEGIN and with COMMIT (sent
 * together, one round trip), so the middleware adds statements, not waits.
 */
import type { ReservedSql, Sql } from "postgres";

import type { TransactionLimits } from "./types.js";

// A timeout of 0 means "never": the shortest budget there is, 1 ms, stands for a zero one.
const timeoutMs = (value: number) => Math.max(1, Math.floor(value));

/** PostgreSQL's names of the limits, as settings of a session. */
const SETTING = { lockTimeoutMs: "lock_timeout", idleInTransactionTimeoutMs: "idle_in_transaction_session_timeout" } as const;

export const setLocalLockTimeout = (ms: number) => `set local ${SETTING.lockTimeoutMs} = ${timeoutMs(ms)}`;

/** Of `limits`, what every connection of a pool carries from its start, in milliseconds (see `connectionLimits`). */
export type CarriedLimits = Partial<TransactionLimits>;

/**
 * `limits` as settings a connection carries from its start: postgres-js's
 * `connection` option, sent in the start-up message, so no transaction
 * sets them again. Not behind a transaction-mode pooler: PgBouncer refuses
 * such start-up parameters, and a session setting would stay on whichever
 * server connection it handed out.
 */
export function connectionLimits(limits: TransactionLimits): Record<string, string> {
  return {
    [SETTING.lockTimeoutMs]: String(timeoutMs(limits.lockTimeoutMs)),
    [SETTING.idleInTransactionTimeoutMs]: String(timeoutMs(limits.idleInTransactionTimeoutMs)),
  };
}

/** A setting given in milliseconds, as `connectionLimits` writes it; anything else (a unit, say) counts as not carried. */
const milliseconds = (value: unknown): number | undefined =>
  typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value)) ? Number(value) : undefined;

/** The limits `sql`'s connections carry from their start (its `connection` option). */
export function carriedLimits(sql: Sql): CarriedLimits {
  // postgres-js keeps its parsed options on the pool (not on a reserved connection).
  const given: Record<string, unknown> = sql.options.connection;
  return {
    lockTimeoutMs: milliseconds(given[SETTING.lockTimeoutMs]),
    idleInTransactionTimeoutMs: milliseconds(given[SETTING.idleInTransactionTimeoutMs]),
  };
}

/**
 * The SET LOCAL statements that put `limits` on the open transaction (plain
 * SQL, for a simple query after BEGIN): each limit its connection does not
 * already carry with the same value (`carried`), so on a pool opened with
 * `connectionLimits(limits)` none, and BEGIN goes alone.
 */
export function setLocalLimits(limits: TransactionLimits, carried: CarriedLimits = {}): string {
  const idle = timeoutMs(limits.idleInTransactionTimeoutMs);
  return [
    idle === carried.idleInTransactionTimeoutMs ? "" : `set local ${SETTING.idleInTransactionTimeoutMs} = ${idle}`,
    timeoutMs(limits.lockTimeoutMs) === carried.lockTimeoutMs ? "" : setLocalLockTimeout(limits.lockTimeoutMs),
  ]
    .filter(Boolean)
    .join("; ");
}

/** PostgreSQL's lock_not_available: a lock wait ran past `lock_timeout`. */
export const LOCK_NOT_AVAILABLE = "55P03";

export const isLockTimeout = (error: unknown) => (error as { code?: string } | undefined)?.code === LOCK_NOT_AVAILABLE;

/** Unsent postgres-js queries: each is sent when awaited, so their order in the list is their order on the wire. */
type Statements = readonly PromiseLike<unknown>[];
/** An unsent postgres-js query that can be sent before anyone waits for it. */
type PendingStatement = PromiseLike<unknown> & { execute(): unknown };
type Results<T extends Statements> = { -readonly [K in keyof T]: Awaited<T[K]> };

/** Sends `statements` in order in one pipeline; the first failure (in order) is thrown once all have settled. */
async function pipeline(statements: Statements): Promise<unknown[]> {
  const settled = await Promise.allSettled(statements);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value);
}

/** BEGIN with `setup` (plain SQL), as one simple query. */
const opener = (setup: string) => (setup ? `begin; ${setup}` : "begin");

export class KeyTransaction {
  private open = false;
  /** A BEGIN sent ahead (`beginAhead`) whose answer nobody has waited for yet. */
  private opening: PromiseLike<unknown> | undefined;
  constructor(readonly conn: ReservedSql) {}

  /**
   * BEGIN (with `setup`) sent now, without waiting for its answer: whatever
   * is issued next goes out behind it on the same connection, in the same
   * write when issued in the same turn, so opening the transaction costs no
   * round trip of its own. Its failure is thrown by `commit`.
   */
  beginAhead(setup: string): void {
    this.open = true;
    const opening = this.conn.unsafe(opener(setup)).execute();
    // Waited for at `commit`; until then its failure must not count as unhandled.
    opening.catch(() => undefined);
    this.opening = opening;
  }

  /**
   * `beginAhead`, with `statements` sent behind BEGIN at once. Returns their
   * rows, for the caller to check before it commits; a failure is also
   * thrown by `commit`.
   */
  beginAheadWith<T extends readonly PendingStatement[]>(setup: string, ...statements: T): Promise<Results<T>> {
    this.beginAhead(setup);
    for (const statement of statements) statement.execute();
    const answered = pipeline([this.opening!, ...statements]).then((rows) => rows.slice(1) as Results<T>);
    answered.catch(() => undefined);
    this.opening = answered;
    return answered;
  }

  /** The statements with the BEGIN sent ahead before them, if one is still unanswered (`commit` waits for it). */
  private behindOpening(statements: Statements): Statements {
    const opening = this.opening;
    this.opening = undefined;
    return opening ? [opening, ...statements] : statements;
  }

  /** BEGIN (with `setup`, plain SQL sent as one simple query) pipelined with `statements`; returns their rows. */
  async begin<T extends Statements>(setup: string, ...statements: T): Promise<Results<T>> {
    this.open = true;
    const [, ...rows] = await pipeline([this.conn.unsafe(opener(setup)), ...statements]);
    return rows as Results<T>;
  }

  /** `statements` pipelined inside the open transaction; returns their rows. */
  async send<T extends Statements>(...statements: T): Promise<Results<T>> {
    return (await pipeline(statements)) as Results<T>;
  }

  /** `statements` pipelined with COMMIT; returns their rows. */
  async commit<T extends Statements>(...statements: T): Promise<Results<T>> {
    const all = this.behindOpening([...statements, this.conn.unsafe("commit")]);
    const rows = await pipeline(all);
    this.open = false;
    return rows.slice(all.length - statements.length - 1, -1) as Results<T>;
  }

  async rollback(to?: string): Promise<void> {
    if (to) return void (await this.conn.unsafe(`rollback to savepoint ${to}`));
    // A failed BEGIN sent ahead leaves nothing to keep: the rollback ends whatever it opened.
    this.opening = undefined;
    this.open = false;
    await this.conn.unsafe("rollback");
  }

  /** A connection must never go back to the pool inside a transaction (failed or not). */
  async close(): Promise<void> {
    if (this.open) await this.conn.unsafe("rollback").catch(() => undefined);
    this.open = false;
    this.conn.release();
  }
}

/** Where key work gets its connections: the pool for single statements, `reserve` for a transaction's own. */
export type Pool = { sql: Sql; reserve: () => Promise<ReservedSql> };

export async function inTransaction<T>(reserve: Pool["reserve"], work: (t: KeyTransaction) => Promise<T>): Promise<T> {
  const t = new KeyTransaction(await reserve());
  try {
    return await work(t);
  } finally {
    await t.close();
  }
}
