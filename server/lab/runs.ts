/**
 * Lab runs, in this process's memory: the simulations a run armed and the
 * steps recorded while its requests ran. A request joins its run through
 * AsyncLocalStorage (entered at the HTTP edge from the Lab-Run header, in
 * demo mode only), so every switch is keyed to one run and none is global.
 * Runs are few and short-lived: the oldest are dropped beyond a bound.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type { LabFaults, LabScenario, LabTarget } from "./scenarios";

export const Lane = { Browser: "browser", App: "app", Database: "database", Provider: "provider" } as const;
export type Lane = (typeof Lane)[keyof typeof Lane];

export type LabStep = {
  /** Milliseconds since the run started. */
  t: number;
  from: Lane;
  to: Lane;
  label: string;
};

export type LabRun = {
  id: string;
  scenario: LabScenario;
  target: LabTarget;
  startedAt: number;
  /** Armed simulations; each fires once and is then cleared. */
  faults: LabFaults;
  steps: LabStep[];
  /** Payments the unprotected twin created: it has no key to find them by. */
  naivePaymentIds: string[];
  /** Requests seen at the edge, numbered so the diagram tells the attempts apart. */
  requests: number;
};

const MAX_RUNS = 200;
const store = globalThis as typeof globalThis & { __labRuns?: Map<string, LabRun>; __labContext?: AsyncLocalStorage<LabRun> };
const runs = (store.__labRuns ??= new Map());
const context = (store.__labContext ??= new AsyncLocalStorage<LabRun>());

export function createRun(scenario: LabScenario, target: LabTarget): LabRun {
  const run: LabRun = {
    id: randomBytes(9).toString("base64url").replace(/[-_]/g, "x"),
    scenario,
    target,
    startedAt: performance.now(),
    faults: { ...scenario.faults },
    steps: [],
    naivePaymentIds: [],
    requests: 0,
  };
  runs.set(run.id, run);
  for (const id of runs.keys()) {
    if (runs.size <= MAX_RUNS) break;
    runs.delete(id);
  }
  return run;
}

export const findRun = (id: string): LabRun | undefined => runs.get(id);

/** Runs `fn` as part of `run`: everything it awaits records into the run and sees its switches. */
export const withinRun = <T>(run: LabRun, fn: () => T): T => context.run(run, fn);

export const currentRun = (): LabRun | undefined => context.getStore();

/** Records a step of the current run (`agoMs` before now), if any; outside a lab run it does nothing. */
export function recordStep(from: Lane, to: Lane, label: string, run: LabRun | undefined = currentRun(), agoMs = 0): void {
  if (!run) return;
  run.steps.push({ t: Math.round((performance.now() - agoMs - run.startedAt) * 10) / 10, from, to, label });
}

/** Takes an armed simulation: true once, then the switch is off. */
export function takeFault<K extends keyof LabFaults>(name: K, run: LabRun | undefined = currentRun()): LabFaults[K] | undefined {
  if (!run) return undefined;
  const value = run.faults[name];
  delete run.faults[name];
  return value;
}
