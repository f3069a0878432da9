/**
 * `npm run bench -- --peers`: the plain write wrapped by two published
 * idempotency libraries with Redis (@node-idempotency/core with its Redis
 * adapter, and Powertools for AWS Lambda's idempotency with its cache
 * persistence layer), beside the plain write, ours and the floor, in-process
 * and interleaved in one run. What each adds per write is its CPU (this
 * process, PostgreSQL and the Redis server) over the plain write's.
 *
 * Then what each does when the process dies after the write committed and
 * before the key's answer was stored (played by a handler that never
 * returns, so the answer is never stored): a retry at once, and a retry
 * once the key's record has expired (1 s here; 24 h and 1 h by default), with
 * the payments that exist afterwards counted in PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { Idempotency } from "@node-idempotency/core";
import { RedisStorageAdapter } from "@node-idempotency/storage-adapter-redis";
import { createClient } from "@redis/client";
import type { Sql } from "postgres";
import { median, type Load, type Sample } from "./measure";
import { int, table } from "./report";
import type { PaymentInput } from "./router";
import { inputFor, interleave, mid } from "./scenarios";
import type { Transport } from "./transports";

/** A peer: the write wrapped by it (`key`, `input`), and the same with a handler that never returns. */
type Peer = {
  name: string;
  write: (key: string, input: PaymentInput) => Promise<void>;
  /** Starts the write and never stores its answer: the process died after the commit. */
  die: (key: string, input: PaymentInput) => void;
};

/** What a peer wraps: the write (the plain procedure), or nothing at all (to measure the layer alone). */
type Handler = (input: PaymentInput) => Promise<unknown>;

type LambdaContext = Parameters<IdempotencyConfig["registerLambdaContext"]>[0];

type Redis = { url: string; pid: number; close: () => Promise<void>; peers: (handler: Handler, ttlSeconds: number) => Peer[] };

/** Connects to Redis for both peers; undefined (and one line on stderr) when it does not answer. */
export async function connectRedis(url: string): Promise<Redis | undefined> {
  const client = createClient({ url, socket: { connectTimeout: 2_000, reconnectStrategy: false } });
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (error) {
    process.stderr.write(`--peers skipped: Redis at ${url} does not answer (${(error as Error).message})\n`);
    return undefined;
  }
  const info = await client.info("server");
  const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
  const adapter = new RedisStorageAdapter({ url });
  await adapter.connect();
  const run = randomUUID().slice(0, 8);
  return {
    url,
    pid,
    close: async () => {
      await adapter.disconnect();
      client.destroy();
    },
    peers: (handler, ttlSeconds) => {
      const never = new Promise<never>(() => undefined);
      const nodeIdempotency = new Idempotency(adapter, { cacheKeyPrefix: `eo-bench-${run}-${ttlSeconds}`, cacheTTLMS: ttlSeconds * 1000 });
      const request = (key: string, input: PaymentInput) => ({
        headers: { "idempotency-key": key },
        body: input,
        path: "/bench/plain",
        method: "POST",
      });
      const powertools = (wrapped: Handler) => {
        const config = new IdempotencyConfig({
          eventKeyJmesPath: "key",
          payloadValidationJmesPath: "input",
          expiresAfterSeconds: ttlSeconds,
        });
        // As a Lambda with a timeout of `ttlSeconds` would: an in-progress record is trusted that long, no longer.
        config.registerLambdaContext({ getRemainingTimeInMillis: () => ttlSeconds * 1000 } as LambdaContext);
        return makeIdempotent(async (event: { key: string; input: PaymentInput }) => wrapped(event.input), {
          persistenceStore: new CachePersistenceLayer({ client }),
          config,
        });
      };
      const poweredWrite = powertools(handler);
      const poweredDeath = powertools(async (input) => (await handler(input), never));
      return [
        {
          name: "@node-idempotency/core + Redis",
          write: async (key, input) => {
            const req = request(key, input);
            if (await nodeIdempotency.onRequest(req)) return;
            await nodeIdempotency.onResponse(req, { body: await handler(input) });
          },
          die: (key, input) => void nodeIdempotency.onRequest(request(key, input)).then(() => handler(input)),
        },
        {
          name: "@aws-lambda-powertools/idempotency + Redis",
          write: async (key, input) => void (await poweredWrite({ key, input })),
          die: (key, input) => void poweredDeath({ key, input }),
        },
      ];
    },
  };
}

export type PeerRow = { name: string; sample: Sample; addedUs?: number };

const cpuOf = (s: Sample) => (s.cpu?.postgresUs === undefined ? undefined : s.cpu.selfUs + s.cpu.postgresUs + (s.cpu.alsoUs ?? 0));

/** Plain, ours, the floor and each peer, interleaved round by round; added CPU is the median of per-round differences to plain. */
export async function peerWrites(t: Transport, redis: Redis, rounds: number, load: Load): Promise<PeerRow[]> {
  const run = randomUUID().slice(0, 8);
  let seq = 0;
  const peers = redis.peers((input) => t.plain(input), 86_400);
  const sides: { name: string; op: (n: number) => Promise<void> }[] = [
    { name: "plain mutation", op: async (n) => void (await t.plain(inputFor(n))) },
    { name: "ours, atomic, fresh key", op: async (n) => void (await t.wrapped(`bench-peers-${run}-${seq++}`, inputFor(n), 1)) },
    { name: "floor (plain + key row)", op: (n) => t.floor(`bench-peers-floor-${run}-${seq++}`, inputFor(n)) },
    ...peers.map((p) => ({ name: p.name, op: (n: number) => p.write(`bench-peers-${run}-${seq++}`, inputFor(n)) })),
  ];
  const ops = sides.map((s) => s.op);
  const samples = await interleave(ops, rounds, load);
  return sides.map((side, i) => ({
    name: side.name,
    sample: mid(samples[i]!),
    addedUs: i === 0 ? undefined : medianDifference(samples[i]!, samples[0]!),
  }));
}

/**
 * Each peer around a handler that only waits as long as the write takes
 * (`WRITE_MS`, no CPU): what its layer costs per call, without the write's
 * CPU, whose swings between windows are larger than what a peer adds. The
 * same wait without any layer is measured beside them and taken off, round
 * by round. The wait keeps the calls spread as they are around a real write
 * (concurrent calls with nothing between them would share Redis round trips).
 */
const WRITE_MS = 10;

export async function peersAlone(redis: Redis, rounds: number, load: Load): Promise<(number | undefined)[]> {
  const run = randomUUID().slice(0, 8);
  let seq = 0;
  const wait = () => new Promise((resolve) => setTimeout(resolve, WRITE_MS));
  const peers = redis.peers(wait, 86_400);
  const [bare, ...wrapped] = await interleave(
    [async () => void (await wait()), ...peers.map((p) => (n: number) => p.write(`bench-alone-${run}-${seq++}`, inputFor(n)))],
    rounds,
    load,
  );
  return wrapped.map((samples) => medianDifference(samples, bare!));
}

/** The median over the rounds of what `samples` cost per operation (node + pg + redis) beyond `base`, round by round. */
function medianDifference(samples: Sample[], base: Sample[]): number | undefined {
  const added = samples.map((s, round) => {
    const [mine, theirs] = [cpuOf(s), cpuOf(base[round]!)];
    return mine === undefined || theirs === undefined ? undefined : mine - theirs;
  });
  const known = added.filter((v): v is number => v !== undefined);
  return known.length ? median(known) : undefined;
}

export type Crash = { name: string; atOnce: string; afterTtl: string; payments: number };

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => "answered (ran or replayed)",
    (error: Error) => `refused: ${error.constructor.name}: ${error.message}`,
  );

/** Each peer's record left in progress by a process that died after the commit, retried at once and after its TTL. */
export async function peerCrashes(t: Transport, redis: Redis, sql: Sql): Promise<Crash[]> {
  const ttlSeconds = 1;
  const crashes: Crash[] = [];
  for (const peer of redis.peers((input) => t.plain(input), ttlSeconds)) {
    const key = `bench-crash-${randomUUID()}`;
    const input = { ...inputFor(1), destination: `acct_${key}` };
    peer.die(key, input);
    // Until its payment has committed: the moment the process dies.
    for (let i = 0; i < 200 && (await paymentsTo(sql, input.destination)) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const atOnce = await outcome(peer.write(key, input));
    await new Promise((r) => setTimeout(r, ttlSeconds * 1000 + 200));
    const afterTtl = await outcome(peer.write(key, input));
    crashes.push({ name: peer.name, atOnce, afterTtl, payments: await paymentsTo(sql, input.destination) });
  }
  return crashes;
}

async function paymentsTo(sql: Sql, destination: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from payments where destination = ${destination}`;
  return row!.n;
}

/** The peers' table, what each adds per write beside ours, the target (ours at most 2× the cheapest peer's), and the crash each was put through. */
export function renderPeers(rows: PeerRow[], alone: (number | undefined)[], crashes: Crash[], setup: string): string {
  const cheapest = Math.min(...alone.map((us) => us ?? Number.POSITIVE_INFINITY));
  const ours = rows[1]!.addedUs;
  const times = (v: number | undefined) =>
    v === undefined || !Number.isFinite(cheapest) || cheapest <= 0 ? "-" : `${(v / cheapest).toFixed(2)}x`;
  const body = table(
    ["write", "ops/s", "node us/op", "pg us/op", "redis us/op", "added us/op", "layer alone us/op", "vs cheapest layer"],
    rows.map((r, i) => {
      const own = i >= 3 ? alone[i - 3] : undefined;
      return [
        r.name,
        int(r.sample.opsPerSec),
        int(r.sample.cpu?.selfUs),
        int(r.sample.cpu?.postgresUs),
        int(r.sample.cpu?.alsoUs),
        int(r.addedUs),
        int(own),
        i === 0 ? "-" : times(i >= 3 ? own : r.addedUs),
      ];
    }),
    new Set([1, 2, 3, 4, 5, 6, 7]),
  );
  const target = ours === undefined || !Number.isFinite(cheapest) ? "-" : ours <= 2 * cheapest ? "met" : "missed";
  // The same target by what each adds to the write itself: noisier (a difference of two writes), and the floor's own rows count.
  const cheapestAdded = Math.min(...rows.slice(3).map((r) => r.addedUs ?? Number.POSITIVE_INFINITY));
  const byAdded =
    ours === undefined || !Number.isFinite(cheapestAdded) || cheapestAdded <= 0
      ? "-"
      : `${(ours / cheapestAdded).toFixed(2)}x, ${ours <= 2 * cheapestAdded ? "met" : "missed"}`;
  return [
    `Peers: ${setup}`,
    "",
    body,
    "",
    "added us/op: CPU per write (node + pg + redis) over the plain write's, the median of per-round differences (a difference of two writes: +-100 us).",
    `layer alone us/op: the peer around a handler that waits ${WRITE_MS} ms and does nothing else, less that wait alone (node + pg + redis, median of per-round differences).`,
    `vs cheapest layer: ours and the floor by their added us/op, a peer by its layer alone. Target: ours <= 2x the cheapest layer: ${target}.`,
    `By added us/op alone, ours against the cheapest peer's: ${byAdded} (target <= 2x).`,
    "",
    "The process dies after the write committed, before the key's answer is stored (the handler never returns); the same key is retried:",
    ...crashes.map(
      (c) => `- ${c.name}: a retry at once: ${c.atOnce}; after the record's TTL: ${c.afterTtl}; payments written: ${c.payments}`,
    ),
    "- ours: there is no such moment: the key row commits in the write's own transaction (tests/idempotency/crash.test.ts kills a process mid-request).",
    "",
  ].join("\n");
}
