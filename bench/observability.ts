/**
 * `npm run bench -- --observability`: what metrics and tracing cost. The
 * fresh-key write and the replay run under one steady load in one process
 * on one database, observation switched off and on every 100 ms
 * (`alternating`); "on" is the app as deployed with a collector: every
 * metric, every span (of the share `--trace-ratio` records), and the spans
 * exported over OTLP/HTTP (to a sink on loopback that reads and drops them,
 * so the export's serialisation and HTTP are paid). The sink is a process of
 * its own, as a collector is: what it spends reading the spans is not the
 * app's. Prints the CPU per operation of both sides, this process and
 * PostgreSQL, their ratio against the 3 % target, and how far the ratios of
 * the run's 2 s blocks spread.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { setObserving } from "../server/observability/switch";
import { startTracing, stopTracing } from "../server/observability/tracing";
import { cpuUse } from "./cpu";
import type { Load } from "./measure";
import { inputFor, type Stored } from "./scenarios";
import type { Transport } from "./transports";

const OBSERVABILITY_TARGET = 1.03;

/**
 * An OTLP/HTTP endpoint that accepts every export and keeps nothing (it
 * answers an empty ExportTraceServiceResponse: everything accepted), in a
 * child process that prints its port and ends with its parent's stdin.
 */
const SINK = `
  const server = require("node:http").createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/x-protobuf" }).end());
  });
  server.listen(0, "127.0.0.1", () => console.log(server.address().port));
  process.stdin.on("end", () => process.exit(0)).resume();`;

async function otlpSink(): Promise<{ url: string; close: () => Promise<void> }> {
  const child = spawn(process.execPath, ["-e", SINK], { stdio: ["pipe", "pipe", "inherit"] });
  const [port] = (await once(child.stdout.setEncoding("utf8"), "data")) as [string];
  return {
    url: `http://127.0.0.1:${port.trim()}`,
    close: async () => {
      child.stdin.end();
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

/** What one side (observation off, or on) used: CPU of this process and of PostgreSQL (µs), and operations finished. */
type Side = { selfUs: number; postgresUs: number; ops: number };
type Row = { transport: string; scenario: string; off: Side; on: Side; blocks: number[] };

/**
 * How long each side runs before the other takes over. The CPU this machine
 * spends on the same work drifts by a fifth over seconds (2 s rounds of one
 * side, then the other, spread by ±10–20 % in their on/off ratios, more than
 * the 3 % measured); sides taking turns every 100 ms see the same drift.
 */
const TURN_MS = 100;
/** Turns per block: each block's own ratio shows how far the measure still spreads. */
const BLOCK_TURNS = 20;

const perOp = (s: Side) => (s.selfUs + s.postgresUs) / s.ops;
const emptySide = (): Side => ({ selfUs: 0, postgresUs: 0, ops: 0 });

/**
 * Runs `op` under one steady load for `durationMs`, observation switched
 * off and on every TURN_MS, and adds each turn's CPU and finished
 * operations to its side. An operation counts for the side it finishes in:
 * those that straddle a switch go both ways equally often.
 */
async function alternating(op: (n: number) => Promise<void>, durationMs: number, load: Load): Promise<Pick<Row, "off" | "on" | "blocks">> {
  const snapshot = load.cpu!;
  const total = { off: emptySide(), on: emptySide() };
  let block = { off: emptySide(), on: emptySide() };
  const blocks: number[] = [];
  let side: "off" | "on" = "off";
  setObserving(false);
  let stopped = false;
  let failure: unknown;
  let next = 0;
  const worker = async () => {
    while (!stopped) {
      await op(next++);
      total[side].ops++;
      block[side].ops++;
    }
  };
  const workers = Array.from({ length: load.concurrency }, () =>
    worker().catch((error: unknown) => {
      failure ??= error;
      stopped = true;
    }),
  );
  await sleep(load.warmupMs);
  total.off.ops = total.on.ops = block.off.ops = block.on.ops = 0;
  let last = await snapshot();
  for (let turn = 1; turn * TURN_MS <= durationMs && !stopped; turn++) {
    await sleep(TURN_MS);
    const now = await snapshot();
    const used = cpuUse(last, now, 1);
    last = now;
    for (const s of [total[side], block[side]]) {
      s.selfUs += used.selfUs;
      s.postgresUs += used.postgresUs ?? 0;
    }
    side = side === "off" ? "on" : "off";
    setObserving(side === "on");
    if (turn % BLOCK_TURNS === 0) {
      blocks.push(perOp(block.on) / perOp(block.off));
      block = { off: emptySide(), on: emptySide() };
    }
  }
  stopped = true;
  await Promise.all(workers);
  setObserving(true);
  if (failure) throw failure;
  return { ...total, blocks: blocks.sort((a, b) => a - b) };
}

function render(rows: Row[], setup: string): string {
  const us = (n: number) => n.toFixed(0).padStart(7);
  const lines = [`Observability cost (${setup}): CPU per operation, this process + PostgreSQL, observation off and on taking turns every ${TURN_MS} ms`];
  lines.push(`${"transport".padEnd(11)}${"scenario".padEnd(11)}${"off µs".padStart(8)}${"on µs".padStart(8)}${"node off".padStart(10)}${"node on".padStart(9)}  on/off  blocks' middle half  target`);
  for (const row of rows) {
    const ratio = perOp(row.on) / perOp(row.off);
    // How far the ratios of the run's blocks (2 s each) spread: their interquartile range (none in a run shorter than a block).
    const quartile = (q: number) => row.blocks[Math.round(q * (row.blocks.length - 1))]?.toFixed(3) ?? "–";
    const verdict = ratio <= OBSERVABILITY_TARGET ? "met" : "MISSED";
    lines.push(
      `${row.transport.padEnd(11)}${row.scenario.padEnd(11)}${us(perOp(row.off))} ${us(perOp(row.on))}${us(row.off.selfUs / row.off.ops).padStart(10)}${us(row.on.selfUs / row.on.ops).padStart(9)}  ${ratio.toFixed(3)}  ${`${quartile(0.25)}–${quartile(0.75)}`.padEnd(19)}  ≤ ${OBSERVABILITY_TARGET} ${verdict}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** `rounds` × the load's duration on each side, as the other benches spend: the sides share the time in turns. */
export async function runObservabilityBench(transports: Transport[], stored: Stored, rounds: number, load: Load, setup: string, sampleRatio: number): Promise<string> {
  const durationMs = 2 * rounds * load.durationMs;
  const sink = await otlpSink();
  startTracing({ serviceName: "exactly-once-bench", endpoint: sink.url, sampleRatio });
  try {
    const rows: Row[] = [];
    for (const t of transports) {
      const run = randomUUID().slice(0, 8);
      let seq = 0;
      const fresh = await alternating(
        async (n) => {
          const answer = await t.wrapped(`bench-observed-${t.name}-${run}-${seq++}`, inputFor(n));
          if (answer.replayed) throw new Error("a fresh key was answered as a replay");
        },
        durationMs,
        load,
      );
      rows.push({ transport: t.name, scenario: "fresh key", ...fresh });
      const replay = await alternating(
        async (n) => {
          const s = stored[n % stored.length]!;
          const answer = await t.wrapped(s.key, s.input);
          if (!answer.replayed) throw new Error(`stored key ${s.key} ran again instead of replaying`);
        },
        durationMs,
        load,
      );
      rows.push({ transport: t.name, scenario: "replay", ...replay });
    }
    return render(rows, setup);
  } finally {
    await stopTracing();
    await sink.close();
  }
}
