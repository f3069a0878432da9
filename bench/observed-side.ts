/**
 * One side of `npm run bench -- --observability`: a process of its own that
 * serves the bench procedures with observation either on or off for its
 * whole life, and drives them when the parent says so. Each side's own CPU
 * (all its threads, `process.cpuUsage`) is counted whenever it is spent, so
 * what observation defers (garbage collection, the batched export) stays
 * on the side that caused it.
 *
 * Each operation runs inside an AsyncLocalStorage store on both sides, as
 * Next.js runs every request of the app (its work and request stores). On
 * Node.js 20 the first store switches a promise hook on for the whole
 * process; under Next.js that is paid with observation off as much as on,
 * so it must not be counted as observation's (OpenTelemetry's context is
 * one more store on the same hook). A tRPC server without such a store
 * would pay it for tracing alone: `--bare` leaves the store out.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { setObserving } from "../server/observability/switch";
import { startTracing, stopTracing } from "../server/observability/tracing";
import { closeDatabase } from "../db/client";
import { app } from "../server/app";
import { openAppDatabase } from "../server/database";
import { logger } from "../server/logger";
import { fresh, inputFor, replay, type Stored } from "./scenarios";
import { inProcess, overHttp, type Tenant, type Transport } from "./transports";

export type SideSetup = {
  url: string;
  tenant: Tenant;
  stored: Stored;
  concurrency: number;
  observing: boolean;
  sink: string;
  sampleRatio: number;
  bare: boolean;
};

/** The host's request store: what Next.js keeps per request, here only its presence. */
const host = new AsyncLocalStorage<{ n: number }>();

/** Parent to side; every message but `go` and `pause` is answered with a `SideReply`. */
export type SideCommand =
  | { kind: "start"; transport: "in-process" | "http"; scenario: "fresh key" | "replay" }
  | { kind: "go" }
  | { kind: "pause" }
  | { kind: "read" }
  | { kind: "stop" }
  | { kind: "exit" };

/** This process's CPU so far (µs) and the operations finished in the current scenario. */
export type SideReply = { cpuUs: number; ops: number; error?: string };

const send = (message: unknown) => process.send!(message);
const cpuUs = () => {
  const used = process.cpuUsage();
  return used.user + used.system;
};

async function main(setup: SideSetup) {
  // As in the other benches: at thousands of events a second, info lines would be most of the work.
  logger.level = "warn";
  openAppDatabase(setup.url, { max: setup.concurrency + 4, pooled: app.settings.DATABASE_POOLED });
  // Both sides register tracing alike; only the side observing ever starts a span.
  startTracing({ serviceName: "exactly-once-bench", endpoint: setup.sink, sampleRatio: setup.sampleRatio });
  setObserving(setup.observing);
  const transports = new Map<string, Transport>();
  let run: { stop: () => Promise<void>; ops: () => number } | undefined;
  const gate: { open: boolean; waiters: (() => void)[] } = { open: false, waiters: [] };
  let failure: string | undefined;

  const start = async (transportName: "in-process" | "http", scenario: "fresh key" | "replay") => {
    if (!transports.has(transportName))
      transports.set(transportName, transportName === "http" ? await overHttp(setup.tenant, setup.concurrency) : inProcess(setup.tenant));
    const t = transports.get(transportName)!;
    gate.open = false;
    const tag = `${transportName}-${process.pid}-${Date.now()}`;
    let next = 0;
    let ops = 0;
    let stopped = false;
    const op = (n: number) =>
      scenario === "fresh key" ? fresh(t, `bench-observed-${tag}-${n}`, inputFor(n)) : replay(t, setup.stored[n % setup.stored.length]!);
    const worker = async () => {
      while (!stopped) {
        if (!gate.open) await new Promise<void>((resolve) => gate.waiters.push(resolve));
        if (stopped) return;
        const n = next++;
        await (setup.bare ? op(n) : host.run({ n }, op, n));
        ops++;
      }
    };
    const workers = Array.from({ length: setup.concurrency }, () =>
      worker().catch((error: unknown) => {
        failure ??= error instanceof Error ? error.message : String(error);
        stopped = true;
      }),
    );
    run = {
      ops: () => ops,
      stop: async () => {
        stopped = true;
        open();
        await Promise.all(workers);
      },
    };
  };
  const open = () => {
    gate.open = true;
    for (const resolve of gate.waiters.splice(0)) resolve();
  };

  process.on("message", (command: SideCommand) => {
    void (async () => {
      switch (command.kind) {
        case "go":
          return open();
        case "pause":
          gate.open = false;
          return;
        case "start":
          await start(command.transport, command.scenario);
          break;
        case "read":
          break;
        case "stop":
          await run?.stop();
          break;
        case "exit":
          for (const t of transports.values()) await t.close();
          await stopTracing();
          await closeDatabase();
          break;
      }
      const reply: SideReply = { cpuUs: cpuUs(), ops: run?.ops() ?? 0, ...(failure ? { error: failure } : {}) };
      send(reply);
      if (command.kind === "exit") process.disconnect();
    })();
  });
}

// A parent that is gone (killed, crashed) leaves nobody to stop this side: it stops itself.
process.once("disconnect", () => process.exit());
process.once("message", (setup: SideSetup) => void main(setup).then(() => send({ cpuUs: cpuUs(), ops: 0 } satisfies SideReply)));
