/**
 * The paired scenarios (the procedures they call: router.ts), each side run
 * under the same load: plain vs wrapped vs floor (the cost of idempotency on
 * a first attempt, and the least any design that stores a result can cost),
 * the recoverable flavour vs its floor, and read vs replay (the cost of
 * answering a retry from the key table). The burst is in burst.ts.
 */
import { randomUUID } from "node:crypto";
import { drive, median, type Load, type Sample } from "./measure";
import type { PaymentInput } from "./router";
import type { Transport } from "./transports";

/** Each side's medians and the rounds themselves (each a base and a subject run seconds apart), whose own ratios report.ts takes. */
export type Pair = { base: Sample; subject: Sample; rounds: { base: Sample; subject: Sample }[] };

export const inputFor = (n: number): PaymentInput => ({
  amountMinor: 100 + (n % 9_900),
  currency: "EUR",
  destination: `acct_bench_${n % 97}`,
});

/** Every metric's median over the rounds (each on its own, so one slow round moves none of them). */
export function mid(samples: Sample[]): Sample {
  const m = (of: (s: Sample) => number | undefined) => {
    const values = samples.map(of).filter((v): v is number => v !== undefined);
    return values.length ? median(values) : undefined;
  };
  return {
    opsPerSec: m((s) => s.opsPerSec)!,
    p50: m((s) => s.p50)!,
    p99: m((s) => s.p99)!,
    count: m((s) => s.count)!,
    cpu: {
      selfUs: m((s) => s.cpu?.selfUs) ?? Number.NaN,
      mainUs: m((s) => s.cpu?.mainUs),
      loopBusy: m((s) => s.cpu?.loopBusy) ?? Number.NaN,
      postgresUs: m((s) => s.cpu?.postgresUs),
      otherShare: m((s) => s.cpu?.otherShare),
      statementsPerOp: m((s) => s.cpu?.statementsPerOp),
      alsoUs: m((s) => s.cpu?.alsoUs),
    },
  };
}

/**
 * Runs every side for `rounds` rounds, in the order ABC CBA ABC..., so no side
 * always runs on the warmer (or more bloated) database. Returns each side's
 * samples, one a round.
 */
export async function interleave(sides: ((n: number) => Promise<void>)[], rounds: number, load: Load): Promise<Sample[][]> {
  const samples = sides.map((): Sample[] => []);
  for (let r = 0; r < rounds; r++) {
    const order = sides.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) samples[i]!.push(await drive(sides[i]!, load));
  }
  return samples;
}

/** Each metric is the median over the rounds; a ratio is the median of the per-round ratios, each taken between runs seconds apart (report.ts). */
const pair = (bases: Sample[], subjects: Sample[]): Pair => ({
  base: mid(bases),
  subject: mid(subjects),
  rounds: bases.map((base, i) => ({ base, subject: subjects[i]! })),
});

async function compare(base: (n: number) => Promise<void>, subject: (n: number) => Promise<void>, rounds: number, load: Load) {
  const [bases, subjects] = await interleave([base, subject], rounds, load);
  return pair(bases!, subjects!);
}

/**
 * The write without idempotency, through the middleware with a fresh key, and the floor (plain + one completed key
 * row): wrapped against plain and against the floor, and the floor against plain (`bound`).
 */
export async function writes(t: Transport, rounds: number, load: Load): Promise<{ plain: Pair; floor: Pair; bound: Pair }> {
  const run = randomUUID().slice(0, 8);
  // `n` starts again with every run; the key must not.
  let seq = 0;
  const [plain, wrapped, floor] = await interleave(
    [
      async (n) => void (await t.plain(inputFor(n))),
      (n) => fresh(t, `bench-${t.name}-${run}-${seq++}`, inputFor(n)),
      (n) => t.floor(`bench-floor-${t.name}-${run}-${seq++}`, inputFor(n)),
    ],
    rounds,
    load,
  );
  return { plain: pair(plain!, wrapped!), floor: pair(floor!, wrapped!), bound: pair(plain!, floor!) };
}

/** The recoverable flavour's write (a call out that does nothing, then the write in its `finish`) against its floor: two commits each. */
export async function recoverableWrites(t: Transport, rounds: number, load: Load): Promise<Pair> {
  const run = randomUUID().slice(0, 8);
  let seq = 0;
  return compare(
    (n) => t.recoverableFloor(`bench-recfloor-${t.name}-${run}-${seq++}`, inputFor(n)),
    (n) => t.recoverable(`bench-rec-${t.name}-${run}-${seq++}`, inputFor(n)),
    rounds,
    load,
  );
}

/** Keys completed once, with the payment each created: the replays' keys and the reads' ids. */
export type Stored = { key: string; input: PaymentInput; paymentId: string }[];

/** A first send of a fresh key: it must run, not replay. */
export async function fresh(t: Transport, key: string, input: PaymentInput): Promise<void> {
  if ((await t.wrapped(key, input, 1)).replayed) throw new Error("a fresh key was answered as a replay");
}

/** A retry of a stored key: it must replay, not run again. */
export async function replay(t: Transport, s: Stored[number]): Promise<void> {
  if (!(await t.wrapped(s.key, s.input, 2)).replayed) throw new Error(`stored key ${s.key} ran again instead of replaying`);
}

export async function storeKeys(t: Transport, count: number, concurrency: number): Promise<Stored> {
  const stored: Stored = [];
  let next = 0;
  const worker = async () => {
    for (let n = next++; n < count; n = next++) {
      const key = `bench-stored-${randomUUID()}`;
      const input = inputFor(n);
      const answer = await t.wrapped(key, input, 1);
      stored.push({ key, input, paymentId: (JSON.parse(answer.body) as { id: string }).id });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return stored;
}

export function readVsReplay(t: Transport, stored: Stored, rounds: number, load: Load): Promise<Pair> {
  const at = (n: number) => stored[n % stored.length]!;
  return compare(
    (n) => t.read(at(n).paymentId),
    (n) => replay(t, at(n)),
    rounds,
    load,
  );
}
