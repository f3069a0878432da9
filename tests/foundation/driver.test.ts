/**
 * The database driver, postgres-js 4.2.0 as released, as this app runs it: a
 * connection that closes under a transaction or a reservation fails every
 * statement still coming, and runs none of them on the next connection,
 * outside the transaction; through PgBouncer in transaction mode, the pool as
 * the app opens it there (db/client.ts's POOLED_DRIVER_OPTIONS) gives every
 * statement its own answer; on a direct connection a statement to be described
 * still goes out behind the one in flight (the round trip the middleware's
 * BEGIN sent ahead saves). Found with the HA cluster's failover soak (`npm run
 * test:failover`), where a primary's loss does exactly this to every open
 * connection. Each test counts rows, not just outcomes, and repeats with fresh
 * tags.
 *
 * `npm run test:drivers -w @exactly-once/trpc` runs this file against other
 * releases (3.x and 4.x) to tell which defects each still has
 * (packages/trpc/docs/DRIVERS.md): a census, where a failing test is a defect
 * that release has.
 */
import { readFileSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import postgres, { type Sql } from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { scratchClusterParent } from "../../db/cluster-home";
import { POOLED_DRIVER_OPTIONS } from "../../db/client";
import { pgBouncerBinary, startPgBouncer, type RunningPgBouncer } from "../../db/pgbouncer";
import { freePort } from "../support/database";

const HUNG_MS = 5_000;

/** A census of another release (test-drivers.sh names it), or the app's own run on the driver node_modules has. */
const census = process.env.POSTGRES_DRIVER_VERSION !== undefined;
const driverMajor = Number((process.env.POSTGRES_DRIVER_VERSION ?? postgresVersion()).split(".")[0]);

function postgresVersion(): string {
  const manifest = path.resolve(import.meta.dirname, "../../node_modules/postgres/package.json");
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
}

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

/**
 * How a statement fails when its connection closes: the driver's CONNECTION_CLOSED, or (postgres-js 4, which reads
 * the server's last message first) the server's own termination error, 57P01 from pg_terminate_backend.
 */
const closedError = { error: expect.stringMatching(/^(CONNECTION_CLOSED|57P01)$/) };

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
        for (const o of earlier) expect(o).toEqual({ error: expect.stringMatching(/^(CONNECTION_CLOSED|57P01|ECONNRESET)$/) });
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

  it("commits nothing of a key transaction (BEGIN on a reservation) whose connection closed: not its later statements, not its COMMIT's", async () => {
    // The middleware's own way (packages/trpc/src/transaction.ts): the session dies while the transaction is idle
    // (a failover, or idle_in_transaction_session_timeout while the handler calls out), then the handler's next write and
    // the key row with COMMIT are sent. Hanging is the tests above' matter; here only what commits counts.
    for (let round = 0; round < 2; round++) {
      const tag = `keytx-closed-${crypto.randomUUID()}`;
      const { sql, nextClose } = watchedPool();
      try {
        const conn = await sql.reserve();
        await conn.unsafe("begin");
        await conn`insert into driver_marks (tag) values (${tag + "-before"})`;
        const [row] = await conn<{ pid: number }[]>`select pg_backend_pid() as pid`;
        // Another request waits for the pool's only connection: the pool connects it again once it has closed.
        const pooled = outcome(sql`select 1 as one`.execute());
        const closed = nextClose();
        await admin`select pg_terminate_backend(${row!.pid})`;
        await closed;
        const after = outcome(conn`insert into driver_marks (tag) values (${tag + "-after"})`.execute());
        const keyRow = outcome(conn`insert into driver_marks (tag) values (${tag + "-key"})`.execute());
        const commit = outcome(conn.unsafe("commit").execute());
        await Promise.all([after, keyRow, commit, pooled]);
        expect(await marks(`${tag}-before`)).toBe(0);
        expect(await marks(`${tag}-after`), "the handler's write after the close").toBe(0);
        expect(await marks(`${tag}-key`), "the key row sent with COMMIT").toBe(0);
      } finally {
        await sql.end({ timeout: 1 });
      }
    }
  });

  it("throws nothing from a timer when a statement is written to a reservation whose connection closed", async () => {
    // Thrown from a timer, the TypeError would end an app's process; here the listener keeps the worker alive.
    const thrown: string[] = [];
    const note = (error: Error) => void thrown.push(error.message);
    process.on("uncaughtException", note);
    try {
      for (let round = 0; round < 4; round++) {
        const { sql, nextClose } = watchedPool();
        try {
          const reserved = await sql.reserve();
          const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
          const closed = nextClose();
          await admin`select pg_terminate_backend(${row!.pid})`;
          await closed;
          // How it ends is the test above's; whether it hangs or fails, it must not throw elsewhere.
          void outcome(reserved`select ${round}::int as n`.execute());
          await new Promise((resolve) => setTimeout(resolve, 50));
        } finally {
          await sql.end({ timeout: 1 });
        }
      }
    } finally {
      process.off("uncaughtException", note);
    }
    expect(thrown, "exceptions thrown outside any statement").toEqual([]);
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

/**
 * A TCP proxy to PostgreSQL that cuts its first client's connection as that client sends its first statement after
 * start-up (postgres-js's type lookup, which it sends before the statement it was opened for); later clients pass.
 */
/** PostgreSQL's FATAL for a terminated session (57P01), as an ErrorResponse message. */
const terminated = (() => {
  const fields = Buffer.from("SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0", "latin1");
  const head = Buffer.alloc(5);
  head.write("E", 0, "latin1");
  head.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([head, fields]);
})();

async function cutFirstQuery(upstreamUrl: string) {
  const upstream = new URL(upstreamUrl);
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const server = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(server);
    const cut = cuts++ === 0;
    let pending = Buffer.alloc(0);
    let started = false;
    client.on("data", (chunk: Buffer) => {
      if (!cut) return void server.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      // Untyped messages (an SSL request, the start-up) until start-up; then a type byte before each length.
      for (;;) {
        const head = started ? 1 : 0;
        if (pending.length < head + 4) return;
        const size = head + pending.readInt32BE(head);
        if (pending.length < size) return;
        const type = started ? String.fromCharCode(pending[0]!) : "";
        if (type === "P" || type === "Q") {
          // As pg_terminate_backend ends a session: its FATAL, then the close.
          server.destroy();
          return void client.end(terminated);
        }
        if (!started && pending.readInt32BE(4) !== 80877103) started = true;
        server.write(pending.subarray(0, size));
        pending = pending.subarray(size);
      }
    });
    server.on("data", (chunk: Buffer) => client.writable && client.write(chunk));
    for (const s of [client, server]) s.on("error", () => {}).on("close", () => (client.destroy(), server.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(upstreamUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("postgres-js: a connection that closes while it is setting up", () => {
  it("fails the statement it was opened for, leaves no unhandled rejection, and serves the pool again", async () => {
    // The type lookup's own failure (postgres-js 3 sends one as a connection starts) surfaces, if at all, here.
    const unhandled: unknown[] = [];
    const note = (reason: unknown) => void unhandled.push((reason as { code?: string }).code ?? String(reason));
    process.on("unhandledRejection", note);
    try {
      for (let round = 0; round < 4; round++) {
        const proxy = await cutFirstQuery(inject("directDatabaseUrl"));
        const sql = postgres(proxy.url, { max: 1, ssl: false, onnotice: () => {} });
        try {
          const first = await outcome(sql`select ${round}::int as n`.execute());
          expect(first, `round ${round}: the first statement`).toEqual({
            error: expect.stringMatching(/^(CONNECTION_CLOSED|57P01|ECONNRESET)$/),
          });
          expect(await outcome(sql`select 1 as one`.execute())).toEqual([{ one: 1 }]);
          await new Promise((resolve) => setTimeout(resolve, 50));
        } finally {
          await sql.end({ timeout: 1 });
          await proxy.close();
        }
      }
    } finally {
      process.off("unhandledRejection", note);
    }
    expect(unhandled, "unhandled rejections").toEqual([]);
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
        // BEGIN with the describe in one write, then the bind, then the rollback: three (postgres-js 4 writes the last
        // two together), where waiting for BEGIN's answer makes four.
        expect(sizes.length, `round ${round}`).toBeLessThanOrEqual(3);
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

    /** Four statements at a time on a pool of two connections, 200 rounds: each must get its own answer. */
    async function expectOwnAnswers(options: postgres.Options<Record<string, never>>) {
      const sql = postgres(bouncer.url, { max: 2, onnotice: () => {}, ...options });
      try {
        for (let round = 0; round < 200; round++) {
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
    }

    // The app does not ask this of its own driver: 4.2.0 fails it, and the app's pool pipelines nothing there (next test).
    // The race is PgBouncer's to win: enough rounds that an unpatched 3.x loses it on every run seen.
    it.runIf(census)(
      "census: gives every statement pipelined on a connection its own answer (a parameterised one is described only once the connection is free)",
      () => expectOwnAnswers({ prepare: false }),
    );

    it("gives every statement its own answer on any release when no statement waits behind another's on a connection (max_pipeline; the app's pooled options)", async () => {
      // The remedy without a patch: postgres-js 3 pipelines nothing at 0; 4 reads 0 as unset, and 1 is its "none".
      const maxPipeline = driverMajor >= 4 ? 1 : 0;
      await expectOwnAnswers(census ? { prepare: false, max_pipeline: maxPipeline } : POOLED_DRIVER_OPTIONS);
    });

    it("gives a key transaction's statements sent ahead of BEGIN's answer their own answers on any release (PgBouncer keeps the server from BEGIN to COMMIT)", async () => {
      // As the middleware runs a key (packages/trpc/src/transaction.ts): a reserved connection, BEGIN sent without
      // waiting, described statements right behind it, then the key row with COMMIT. Other clients keep PgBouncer's
      // two server connections changing hands meanwhile, each with one statement at a time (no pipelining of theirs).
      // A census asks it of the release's defaults; the app's own run, of its pooled options.
      const options = census ? { prepare: false } : POOLED_DRIVER_OPTIONS;
      const sql = postgres(bouncer.url, { max: 4, onnotice: () => {}, ...options });
      const others = postgres(bouncer.url, { max: 4, onnotice: () => {}, ...options });
      let busy = true;
      const noise = Array.from({ length: 4 }, async (_, i) => {
        while (busy) await others`select ${i}::int as n`;
      });
      try {
        for (let round = 0; round < 50; round++) {
          const keys = Array.from({ length: 4 }, async (_, k) => {
            const tag = `keytx-${crypto.randomUUID()}`;
            const conn = await sql.reserve();
            try {
              const opened = conn.unsafe("begin").execute();
              const first = conn<{ k: number }[]>`insert into driver_marks (tag) values (${tag}) returning ${k}::int as k`.execute();
              const second = conn<{ t: string }[]>`select tag as t from driver_marks where tag = ${tag}`.execute();
              const answers = await Promise.all([
                opened.then(() => "open"),
                first,
                second,
                conn`select ${round}::int as r`,
                conn.unsafe("commit"),
              ]);
              expect(
                answers.map((a) => (Array.isArray(a) ? [...a] : a)),
                `round ${round}, key ${k}`,
              ).toEqual(["open", [{ k }], [{ t: tag }], [{ r: round }], []]);
              expect(await marks(tag)).toBe(1);
            } finally {
              conn.release();
            }
          });
          await Promise.all(keys.map((key) => outcome(key).then((o) => expect(o).not.toBe("hung"))));
          await Promise.all(keys);
        }
      } finally {
        busy = false;
        await Promise.allSettled(noise);
        await Promise.all([sql.end({ timeout: 1 }), others.end({ timeout: 1 })]);
      }
    });
  },
);
