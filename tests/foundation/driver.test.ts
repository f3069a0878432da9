/**
 * The database driver, postgres-js 3.4.9, as this app runs it (with the fixes
 * in patches/postgres+3.4.9.patch; patches/README.md says why each is
 * there): a connection that closes under a transaction or a reservation
 * fails every statement still coming, and runs none of them on the next
 * connection, outside the transaction; and through PgBouncer in transaction
 * mode, statements pipelined on one connection each get their own answer,
 * while on a direct connection a statement to be described still goes out
 * behind the one in flight (the round trip the middleware's BEGIN sent
 * ahead saves). Found with the HA cluster's failover soak (`npm run test:failover`), where a
 * primary's loss does exactly this to every open connection. Each test
 * counts rows, not just outcomes, and repeats with fresh tags.
 */
import { rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import postgres, { type Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { scratchClusterParent } from "../../db/cluster-home";
import { pgBouncerBinary, startPgBouncer, type RunningPgBouncer } from "../../db/pgbouncer";
import { freePort } from "../support/database";

const HUNG_MS = 5_000;

/** How a statement ended: its value, the driver's error code, or "hung" when it did not settle within HUNG_MS. */
async function outcome(statement: PromiseLike<unknown>): Promise<unknown> {
  let clock: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve(statement).then(
        (value) => value,
        (error: unknown) => ({ error: (error as { code?: string }).code ?? String(error) }),
      ),
      new Promise((resolve) => (clock = setTimeout(resolve, HUNG_MS, "hung"))),
    ]);
  } finally {
    clearTimeout(clock);
  }
}

const closedError = { error: "CONNECTION_CLOSED" };

let admin: Sql;

beforeAll(async () => {
  admin = postgres(inject("directDatabaseUrl"), { max: 1, onnotice: () => {} });
  await admin`create table if not exists driver_marks (tag text not null)`;
});

afterAll(async () => {
  await admin?.end();
});

const marks = async (tag: string) => (await admin<{ n: number }[]>`select count(*)::int as n from driver_marks where tag = ${tag}`)[0]!.n;

/** A pool of one connection that says when that connection closes. */
function watchedPool() {
  let closed = () => {};
  const sql = postgres(inject("directDatabaseUrl"), { max: 1, onnotice: () => {}, onclose: () => closed() });
  return { sql, nextClose: () => new Promise<void>((resolve) => (closed = resolve)) };
}

describe("postgres-js: a connection that closes under a transaction or a reservation", () => {
  it("fails the transaction's later statements, runs none of them outside it, and serves the pool's waiting query on a new connection", async () => {
    for (let round = 0; round < 4; round++) {
      const tag = `tx-${crypto.randomUUID()}`;
      const { sql, nextClose } = watchedPool();
      let pooled: PromiseLike<unknown> | undefined;
      // The transaction rejects as its connection closes; the late statement is sent after: waited for explicitly.
      // (Boxed: a promise resolved with a statement would adopt the statement's outcome.)
      let sendLate!: (sent: { statement: PromiseLike<unknown> }) => void;
      const lateSent = new Promise<{ statement: PromiseLike<unknown> }>((resolve) => (sendLate = resolve));
      try {
        const transaction = sql.begin(async (tx) => {
          await tx`insert into driver_marks (tag) values (${tag + "-inside"})`;
          const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
          // The pool's only connection is the transaction's: this one waits for it.
          pooled = sql`insert into driver_marks (tag) values (${tag + "-pool"}) returning tag`.execute();
          const closed = nextClose();
          await admin`select pg_terminate_backend(${row!.pid})`;
          await closed;
          const late = tx`insert into driver_marks (tag) values (${tag + "-late"})`.execute();
          sendLate({ statement: late });
          await late;
        });
        expect(await outcome(transaction)).toEqual(closedError);
        expect(await outcome((await lateSent).statement)).toEqual(closedError);
        expect(await outcome(pooled!)).toEqual([{ tag: `${tag}-pool` }]);
        expect(await marks(`${tag}-inside`)).toBe(0);
        expect(await marks(`${tag}-late`)).toBe(0);
        expect(await marks(`${tag}-pool`)).toBe(1);
      } finally {
        await sql.end({ timeout: 1 });
      }
    }
  });

  it("fails a reservation's sent and queued statements and every later one, and the pool serves again", async () => {
    for (let round = 0; round < 4; round++) {
      const tag = `reserved-${crypto.randomUUID()}`;
      const { sql, nextClose } = watchedPool();
      try {
        const reserved = await sql.reserve();
        const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
        // In flight on the connection, then one that waits for it (a first parameterised
        // statement is described before it runs), then two in the reservation's own queue.
        // Each is watched from the start (`outcome`): they fail while the test awaits the kill.
        const inFlight = outcome(reserved`select pg_sleep(0.5)`.execute());
        const described = outcome(reserved`select ${round}::int as n`.execute());
        const queued = [1, 2].map((i) => outcome(reserved`insert into driver_marks (tag) values (${`${tag}-queued-${i}`})`.execute()));
        const closed = nextClose();
        await admin`select pg_terminate_backend(${row!.pid})`;
        await closed;
        const late = outcome(reserved`insert into driver_marks (tag) values (${tag + "-late"})`.execute());
        const [lateOutcome, ...earlier] = await Promise.all([late, inFlight, described, ...queued]);
        // A statement already on the wire fails with the socket's own error when the server's reset is read
        // before its termination message (ECONNRESET, seen under load); every one fails, none hangs or runs.
        for (const o of earlier) expect(o).toEqual({ error: expect.stringMatching(/^(CONNECTION_CLOSED|ECONNRESET)$/) });
        expect(lateOutcome).toEqual(closedError);
        reserved.release();
        expect(await outcome(sql`select 1 as one`.execute())).toEqual([{ one: 1 }]);
        expect(await marks(`${tag}-queued-1`)).toBe(0);
        expect(await marks(`${tag}-queued-2`)).toBe(0);
        expect(await marks(`${tag}-late`)).toBe(0);
      } finally {
        await sql.end({ timeout: 1 });
      }
    }
  });

  it("hands a reservation that waits for a connection the one that closed, once it has connected again", async () => {
    for (let round = 0; round < 4; round++) {
      const { sql, nextClose } = watchedPool();
      try {
        const holder = await sql.reserve();
        const [row] = await holder<{ pid: number }[]>`select pg_backend_pid() as pid`;
        // The pool's only connection is held: this reservation waits for it.
        const waiting = sql.reserve();
        const closed = nextClose();
        await admin`select pg_terminate_backend(${row!.pid})`;
        await closed;
        holder.release();
        const next = await outcome(waiting);
        expect(next, "the waiting reservation").not.toBe("hung");
        const reserved = next as Awaited<typeof waiting>;
        expect(await outcome(reserved`select ${round}::int as n`.execute())).toEqual([{ n: round }]);
        reserved.release();
        expect(await outcome(sql`select 1 as one`.execute())).toEqual([{ one: 1 }]);
      } finally {
        await sql.end({ timeout: 1 });
      }
    }
  });
});

const installed = pgBouncerBinary() !== undefined;

describe("postgres-js on a direct connection (prepare: true)", () => {
  /** The sizes of the socket writes `work` makes on a reserved connection of its own. */
  async function writesOf(sql: Sql, work: (conn: postgres.ReservedSql) => Promise<unknown>) {
    const conn = await sql.reserve();
    const written: number[] = [];
    const write = net.Socket.prototype.write;
    net.Socket.prototype.write = function (this: net.Socket, chunk: unknown, ...rest: unknown[]) {
      written.push((chunk as Buffer).length);
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof write;
    try {
      return { result: await work(conn), sizes: written };
    } finally {
      net.Socket.prototype.write = write;
      conn.release();
    }
  }

  it("sends a statement to be described right behind the one in flight, so a BEGIN sent ahead costs no round trip, and each gets its own answer", async () => {
    const sql = postgres(inject("directDatabaseUrl"), { max: 1, onnotice: () => {} });
    try {
      for (let round = 0; round < 20; round++) {
        const tag = `direct-${crypto.randomUUID()}`;
        // As the idempotency middleware opens a key's transaction: BEGIN sent without waiting, then the handler's first
        // statement as Drizzle issues it (unprepared, parameterised: described before it is bound).
        const { result, sizes } = await writesOf(sql, async (conn) => {
          const opened = conn.unsafe("begin; set local lock_timeout = 1000").execute();
          const first = conn.unsafe("insert into driver_marks (tag) values ($1) returning $2::int as round", [tag, round]);
          const answers = await Promise.all([opened.then(() => "open"), first, conn.unsafe("rollback")]);
          return answers.map((a) => (Array.isArray(a) ? [...a] : a));
        });
        expect(result, `round ${round}`).toEqual(["open", [{ round }], []]);
        // BEGIN with the describe in one write, then the bind, then the rollback: three, where waiting for BEGIN's answer makes four.
        expect(sizes, `round ${round}`).toHaveLength(3);
        expect(await marks(tag)).toBe(0);
      }
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe.skipIf(!installed)(
  `postgres-js through PgBouncer in transaction mode${installed ? "" : " (skipped: /usr/sbin/pgbouncer is not installed)"}`,
  () => {
    let bouncer: RunningPgBouncer;
    let scratch: string;

    beforeAll(async () => {
      scratch = scratchClusterParent("pgbouncer");
      bouncer = await startPgBouncer({
        upstreamUrl: inject("directDatabaseUrl"),
        port: await freePort(),
        runDir: path.join(scratch, "run"),
        poolSize: 2,
      });
    });

    afterAll(async () => {
      await bouncer?.stop();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it("gives every statement pipelined on a connection its own answer (a parameterised one is described only once the connection is free)", async () => {
      // Two connections for four statements at a time: the pool pipelines them.
      const sql = postgres(bouncer.url, { max: 2, prepare: false, onnotice: () => {} });
      try {
        for (let round = 0; round < 50; round++) {
          const text = `r${round}`;
          const answers = await Promise.all([
            outcome(sql`select ${round}::int as v`.execute()),
            outcome(sql`select 'fixed' as v`.execute()),
            outcome(sql`select ${text}::text || '!' as v`.execute()),
            outcome(sql`select ${round}::int * 2 as v, pg_sleep(0.001)::text as s`.execute()),
          ]);
          expect(answers, `round ${round}`).toEqual([[{ v: round }], [{ v: "fixed" }], [{ v: `${text}!` }], [{ v: round * 2, s: "" }]]);
        }
      } finally {
        await sql.end({ timeout: 1 });
      }
    });
  },
);
