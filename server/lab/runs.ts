/**
 * Lab runs, in the database (db/schema/lab.ts): the simulations a run armed
 * and the steps recorded while its requests ran. Any app instance can start
 * a run, serve its requests or build its report: nothing of a run lives in
 * one process. A request joins its run through AsyncLocalStorage (entered at
 * the HTTP edge from the Lab-Run header, in demo mode only), so every switch
 * is keyed to one run and none is global.
 *
 * A step is recorded synchronously (the middleware's event hook and the
 * provider client's observer cannot wait) and written at once in the
 * background; the edge waits for a request's writes before it answers, so a
 * report asked for after the answers, on whichever instance, sees them all.
 * Times are epoch milliseconds with a fraction (performance.timeOrigin +
 * performance.now()), one clock for every process on the machine.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type { Sql } from "postgres";
import type { Database } from "../../db/client";
import { DomainError } from "../errors";
import { logger } from "../logger";
import { naiveCallsOf, scenarioById, type LabFaults, type LabScenario, type LabTarget } from "./scenarios";

export const Lane = { Browser: "browser", Completer: "completer", App: "app", Database: "database", Provider: "provider" } as const;
export type Lane = (typeof Lane)[keyof typeof Lane];

export type LabStep = {
  /** Milliseconds since the run started. */
  t: number;
  from: Lane;
  to: Lane;
  /** In the middleware's own terms (fences, phases, downstream keys): the technical view, and what tests match. */
  label: string;
  /** The same step in words anyone follows: the page's default view. */
  plain: string;
};

/**
 * A step's words: one string when it reads the same to a shopper and a
 * developer, or both versions when the technical one names the middleware's
 * internals (a fence, a phase, a downstream key).
 */
export type Words = string | { plain: string; technical: string };

/**
 * What a request needs of its run: `faults` as armed when the request
 * joined it (which runtime its key is claimed with); whether a switch fires
 * is decided in the database when used (takeFault), as are counts and steps.
 */
export type LabRun = {
  id: string;
  scenario: LabScenario;
  target: LabTarget;
  startedMs: number;
  faults: LabFaults;
  sql: Sql;
  /** A call's arrival not yet drawn: it is, with the first step the call records (see deferStep). */
  deferred?: () => void;
};

/** Runs older than this are deleted when a new one starts: a demo's runs are read within minutes. */
const KEEP_RUNS_MS = 24 * 60 * 60 * 1000;
/**
 * Anyone may start a run (the lab needs no sign-in), so runs are bounded: at
 * most `kept` kept (the oldest go first) and `perMinute` started per minute
 * across instances (LAB_RUNS_PER_MINUTE).
 */
export type LabRunLimits = { kept?: number; perMinute: number };
const KEPT_RUNS = 200;
/** Serialises starts across instances, so the per-minute count is exact. */
const START_LOCK = 0x1ab5_7a27;

const store = globalThis as typeof globalThis & { __labContext?: AsyncLocalStorage<LabRun>; __labWrites?: Map<string, Set<Promise<void>>> };
const context = (store.__labContext ??= new AsyncLocalStorage<LabRun>());
/** Step writes still in flight, by run. */
const writes = (store.__labWrites ??= new Map());
let seq = 0;

const nowMs = () => performance.timeOrigin + performance.now();

/** A new run; a 429 once `limits.perMinute` runs started within the last minute. */
export async function createRun(pool: Database, scenario: LabScenario, target: LabTarget, limits: LabRunLimits): Promise<LabRun> {
  const id = randomBytes(9).toString("base64url").replace(/[-_]/g, "x");
  const run: LabRun = { id, scenario, target, startedMs: nowMs(), faults: scenario.faults, sql: pool.sql };
  await pool.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${START_LOCK})`;
    const [recent] = await tx<{ n: number }[]>`select count(*)::int as n from lab_runs where created_at > now() - interval '1 minute'`;
    if (recent!.n >= limits.perMinute) {
      throw new DomainError("too-many-lab-runs", 429, `At most ${limits.perMinute} lab runs start per minute; try again shortly.`, {
        retryAfter: 60,
      });
    }
    await tx`
      delete from lab_runs
      where created_at < now() - ${KEEP_RUNS_MS}::float8 * interval '1 millisecond'
         or id in (select id from lab_runs order by created_at desc, id offset ${(limits.kept ?? KEPT_RUNS) - 1})`;
    await tx`insert into lab_runs (id, scenario, target, faults, started_ms) values (${run.id}, ${scenario.id}, ${target}, ${JSON.stringify(scenario.faults)}::jsonb, ${run.startedMs})`;
  });
  return run;
}

export async function findRun(sql: Sql, id: string): Promise<LabRun | undefined> {
  // JSON as text: the pool is shared with Drizzle, whose parsers pass json through unparsed.
  const [row] = await sql<{ scenario: string; target: LabTarget; started_ms: number; faults: string }[]>`
    select scenario, target, started_ms, faults::text as faults from lab_runs where id = ${id}`;
  const scenario = row && scenarioById(row.scenario);
  return scenario
    ? { id, scenario, target: row.target, startedMs: row.started_ms, faults: JSON.parse(row.faults) as LabFaults, sql }
    : undefined;
}

/** Runs `fn` as part of `run`: everything it awaits records into the run and sees its switches. */
export const withinRun = <T>(run: LabRun, fn: () => T): T => context.run(run, fn);

export const currentRun = (): LabRun | undefined => context.getStore();

/**
 * Records a step of a run (`agoMs` before now): the current one unless
 * named; outside a lab run it does nothing. A step for a run that does not
 * exist (a webhook event id naming no run) is not written.
 */
export function recordStep(
  from: Lane,
  to: Lane,
  words: Words,
  run: Pick<LabRun, "id" | "sql"> | undefined = currentRun(),
  agoMs = 0,
): void {
  if (!run) return;
  (run as LabRun).deferred?.();
  const at = nowMs() - agoMs;
  seq = (seq + 1) % 2 ** 31;
  const { plain, technical } = typeof words === "string" ? { plain: words, technical: words } : words;
  const write = run.sql`insert into lab_steps (run_id, at_ms, seq, from_lane, to_lane, label, plain)
         select ${run.id}, ${at}, ${seq}, ${from}, ${to}, ${technical}, ${plain} where exists (select 1 from lab_runs where id = ${run.id})`.then(
    () => undefined,
    (err: unknown) => logger.warn({ err, run: run.id }, "lab: a step was not recorded"),
  );
  const pending = writes.get(run.id) ?? new Set();
  writes.set(run.id, pending.add(write));
  void write.then(() => {
    pending.delete(write);
    if (pending.size === 0 && writes.get(run.id) === pending) writes.delete(run.id);
  });
}

/**
 * Holds a step back until the run records another (this one drawn first, at
 * `arrived`, a performance.now() reading) or `flush` is called; `drop`
 * forgets it. A call that did nothing then leaves no trace, while one that
 * stops dead midway still shows it arrived.
 */
export function deferStep(run: LabRun, from: Lane, to: Lane, words: Words, arrived: number): { flush: () => void; drop: () => void } {
  // Drawn at most once: it lets go of the run before it records.
  const step = () => {
    run.deferred = undefined;
    recordStep(from, to, words, run, performance.now() - arrived);
  };
  run.deferred = step;
  return {
    flush: () => {
      if (run.deferred === step) step();
    },
    drop: () => {
      if (run.deferred === step) run.deferred = undefined;
    },
  };
}

/** Waits until this process's steps of the run are written. */
export async function stepsWritten(runId: string): Promise<void> {
  await Promise.all([...(writes.get(runId) ?? [])]);
}

/** The run's steps as every instance recorded them, in time order. */
export async function stepsOf(run: LabRun): Promise<LabStep[]> {
  await stepsWritten(run.id);
  const rows = await run.sql<{ at_ms: number; from_lane: Lane; to_lane: Lane; label: string; plain: string | null }[]>`
    select at_ms, from_lane, to_lane, label, plain from lab_steps where run_id = ${run.id} order by at_ms, seq, id`;
  return rows.map((r) => ({
    t: Math.round((r.at_ms - run.startedMs) * 10) / 10,
    from: r.from_lane,
    to: r.to_lane,
    label: r.label,
    plain: r.plain ?? r.label,
  }));
}

/** Takes an armed simulation: its value once, for one instance only, then the switch is off. */
export async function takeFault<K extends keyof LabFaults>(name: K, run = currentRun()): Promise<LabFaults[K] | undefined> {
  if (!run) return undefined;
  // JSON as text: the pool is shared with Drizzle, whose parsers pass json through unparsed.
  const [row] = await run.sql<{ value: string }[]>`
    update lab_runs r set faults = r.faults - ${name}
    from (select id, faults -> ${name} as value from lab_runs where id = ${run.id} for update) armed
    where r.id = armed.id and armed.value is not null
    returning armed.value::text as value`;
  return row ? (JSON.parse(row.value) as LabFaults[K]) : undefined;
}

/** Whether a simulation of the run is armed, leaving it armed (a switch that holds for many calls). */
export async function isArmed(name: keyof LabFaults, run: LabRun): Promise<boolean> {
  const [row] = await run.sql<{ armed: boolean }[]>`select faults ? ${name} as armed from lab_runs where id = ${run.id}`;
  return row?.armed ?? false;
}

/** Numbers a request of the run as the edge sees it. */
export async function countRequest(run: LabRun): Promise<number> {
  const [row] = await run.sql<{ requests: number }[]>`update lab_runs set requests = requests + 1 where id = ${run.id} returning requests`;
  return row!.requests;
}

/** Books one of the run's naive calls for `paymentId`, in one statement so parallel calls cannot overrun; false once they are used up. */
export async function takeNaiveCall(run: LabRun, paymentId: string): Promise<boolean> {
  const taken = await run.sql`
    update lab_runs set naive_payment_ids = array_append(naive_payment_ids, ${paymentId})
    where id = ${run.id} and cardinality(naive_payment_ids) < ${naiveCallsOf(run.scenario)}
    returning id`;
  return taken.length > 0;
}

export async function naivePaymentIdsOf(run: LabRun): Promise<string[]> {
  const [row] = await run.sql<{ naive_payment_ids: string[] }[]>`select naive_payment_ids from lab_runs where id = ${run.id}`;
  return row?.naive_payment_ids ?? [];
}
