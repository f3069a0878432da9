/**
 * `npm run bench -- --observability`: what metrics and tracing cost. The
 * fresh-key write and the replay are run with observation off and on,
 * interleaved round by round (off/on, on/off, ...) in one process on one
 * database; "on" is the app as deployed with a collector: every metric,
 * every span, and the spans exported over OTLP/HTTP (to a sink on loopback
 * that reads and drops them, so the export's serialisation and HTTP are
 * paid). The sink is a process of its own, as a collector is: what it
 * spends reading the spans is not the app's. Prints the CPU per operation of both sides, this process and
 * PostgreSQL, and the ratio against the 3 % target.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { setObserving } from "../server/observability/switch";
import { startTracing, stopTracing } from "../server/observability/tracing";
import { drive, median, type Load, type Sample } from "./measure";
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

const cpuPerOp = (s: Sample) => s.cpu!.selfUs + (s.cpu!.postgresUs ?? 0);

type Row = { transport: string; scenario: string; off: Sample[]; on: Sample[] };

async function offAndOn(op: (n: number) => Promise<void>, rounds: number, load: Load): Promise<{ off: Sample[]; on: Sample[] }> {
  const off: Sample[] = [];
  const on: Sample[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const observed of r % 2 === 0 ? [false, true] : [true, false]) {
      setObserving(observed);
      (observed ? on : off).push(await drive(op, load));
    }
  }
  setObserving(true);
  return { off, on };
}

function render(rows: Row[], setup: string): string {
  const us = (n: number) => n.toFixed(0).padStart(7);
  const lines = [`Observability cost (${setup}): CPU per operation, this process + PostgreSQL, median of the rounds`];
  lines.push(`${"transport".padEnd(11)}${"scenario".padEnd(11)}${"off µs".padStart(8)}${"on µs".padStart(8)}${"node off".padStart(10)}${"node on".padStart(9)}  on/off  rounds' middle half  target`);
  for (const row of rows) {
    const ratios = row.off.map((o, i) => cpuPerOp(row.on[i]!) / cpuPerOp(o)).sort((a, b) => a - b);
    const ratio = median(ratios);
    // How far the rounds' own ratios spread (their interquartile range): a target closer than that is within the machine's noise.
    const spread = `${ratios[Math.floor((ratios.length - 1) / 4)]!.toFixed(3)}–${ratios[Math.ceil((3 * (ratios.length - 1)) / 4)]!.toFixed(3)}`;
    const off = median(row.off.map(cpuPerOp));
    const on = median(row.on.map(cpuPerOp));
    const verdict = ratio <= OBSERVABILITY_TARGET ? "met" : "MISSED";
    lines.push(
      `${row.transport.padEnd(11)}${row.scenario.padEnd(11)}${us(off)} ${us(on)}${us(median(row.off.map((s) => s.cpu!.selfUs))).padStart(10)}${us(median(row.on.map((s) => s.cpu!.selfUs))).padStart(9)}  ${ratio.toFixed(3)}  ${spread.padEnd(19)}  ≤ ${OBSERVABILITY_TARGET} ${verdict}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

export async function runObservabilityBench(transports: Transport[], stored: Stored, rounds: number, load: Load, setup: string, sampleRatio: number): Promise<string> {
  const sink = await otlpSink();
  startTracing({ serviceName: "exactly-once-bench", endpoint: sink.url, sampleRatio });
  try {
    const rows: Row[] = [];
    for (const t of transports) {
      const run = randomUUID().slice(0, 8);
      let seq = 0;
      const fresh = await offAndOn(
        async (n) => {
          const answer = await t.wrapped(`bench-observed-${t.name}-${run}-${seq++}`, inputFor(n));
          if (answer.replayed) throw new Error("a fresh key was answered as a replay");
        },
        rounds,
        load,
      );
      rows.push({ transport: t.name, scenario: "fresh key", ...fresh });
      const replay = await offAndOn(
        async (n) => {
          const s = stored[n % stored.length]!;
          const answer = await t.wrapped(s.key, s.input);
          if (!answer.replayed) throw new Error(`stored key ${s.key} ran again instead of replaying`);
        },
        rounds,
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
