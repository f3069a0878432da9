/**
 * `npm run bench -- --observability`: what metrics and tracing cost. Two
 * processes serve the bench procedures on one database, one with
 * observation off and one with it on, and take turns every 100 ms under one
 * steady load (`takingTurns`); "on" is the app as deployed with a
 * collector: every metric, every span (of the share `--trace-ratio`
 * records), and the spans exported over OTLP/HTTP (to a sink on loopback
 * that reads and drops them, so the export's serialisation and HTTP are
 * paid). The sink is a process of its own, as a collector is: what it
 * spends reading the spans is not the app's.
 *
 * A process per side, because one process switching observation on and off
 * hides part of its cost: the garbage collection of the spans, the batched
 * export and OpenTelemetry's promise hook land in whichever turn runs then,
 * half of them in the "off" turns. Turns, because the CPU this machine
 * spends on the same work drifts by a fifth over seconds: both sides see
 * the same drift. Prints the CPU per operation of both sides (their own
 * process and PostgreSQL), their ratio against the 3 % target, and how far
 * the ratios of the run's 2 s blocks spread.
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { cpuUse } from "./cpu";
import type { Load } from "./measure";
import type { SideCommand, SideReply, SideSetup } from "./observed-side";

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

/** What one side (observation off, or on) used: CPU of its process and of PostgreSQL (µs), and operations finished. */
type Side = { selfUs: number; postgresUs: number; ops: number };
type Row = { transport: string; scenario: string; off: Side; on: Side; blocks: number[] };

/** How long each side runs before the other takes over: short enough that both see the machine's drift alike. */
const TURN_MS = 100;
/** Turns per block: each block's own ratio shows how far the measure still spreads. */
const BLOCK_TURNS = 20;

/** The least warm-up per scenario: the sides are fresh processes, and the first scenario of each transport meets cold code. */
const WARMUP_MS = 2000;

const perOp = (s: Side) => (s.selfUs + s.postgresUs) / s.ops;
const emptySide = (): Side => ({ selfUs: 0, postgresUs: 0, ops: 0 });

/** A side's process, driven over IPC (`observed-side.ts`). */
class SideProcess {
  private readonly replies: ((reply: SideReply) => void)[] = [];
  private constructor(private readonly child: ChildProcess) {
    child.on("message", (reply: SideReply) => this.replies.shift()?.(reply));
  }

  static async spawn(setup: SideSetup): Promise<SideProcess> {
    // Forked with this process's flags, so it loads TypeScript as this one does.
    const side = new SideProcess(
      fork(fileURLToPath(new URL("./observed-side.ts", import.meta.url)), { stdio: ["ignore", "inherit", "inherit", "ipc"] }),
    );
    await side.ask(setup);
    return side;
  }

  /** The setup or a command that is answered: the side's CPU so far and its operations. */
  ask(message: SideSetup | Exclude<SideCommand, { kind: "go" | "pause" }>): Promise<SideReply> {
    const reply = new Promise<SideReply>((resolve, reject) => {
      const gone = () => reject(new Error("a bench side exited before it answered"));
      this.child.once("exit", gone);
      this.replies.push((reply) => {
        this.child.off("exit", gone);
        if (reply.error) reject(new Error(reply.error));
        else resolve(reply);
      });
    });
    this.child.send(message);
    return reply;
  }

  tell(command: Extract<SideCommand, { kind: "go" | "pause" }>): void {
    this.child.send(command);
  }

  async exit(): Promise<void> {
    const exited = once(this.child, "exit");
    await this.ask({ kind: "exit" });
    await exited;
  }
}

/**
 * Runs one scenario on both sides, which take turns every TURN_MS: one
 * drives the load while the other waits. Each side's own CPU counts
 * whenever it is spent; PostgreSQL's CPU goes to the side whose turn it is.
 * Operations that straddle a switch go both ways equally often.
 */
async function takingTurns(
  sides: { off: SideProcess; on: SideProcess },
  transport: "in-process" | "http",
  scenario: "fresh key" | "replay",
  durationMs: number,
  load: Load,
): Promise<Pick<Row, "off" | "on" | "blocks">> {
  const snapshot = load.cpu!;
  const both = (command: Exclude<SideCommand, { kind: "go" | "pause" }>) => Promise.all([sides.off.ask(command), sides.on.ask(command)]);
  await both({ kind: "start", transport, scenario });
  let side: "off" | "on" = "off";
  const turn = async () => {
    sides[side === "off" ? "on" : "off"].tell({ kind: "pause" });
    sides[side].tell({ kind: "go" });
    await sleep(TURN_MS);
  };
  // Each scenario warms up in turns too, long enough for the JIT to settle on both sides.
  for (let t = 0; t * TURN_MS < Math.max(load.warmupMs, WARMUP_MS); t++, side = side === "off" ? "on" : "off") await turn();
  const read = async () => {
    const [off, on] = await both({ kind: "read" });
    return { off, on };
  };
  const total = { off: emptySide(), on: emptySide() };
  let block = { off: emptySide(), on: emptySide() };
  const blocks: number[] = [];
  let blockFrom = await read();
  const totalFrom = blockFrom;
  let last = await snapshot();
  const add = (into: { off: Side; on: Side }, from: { off: SideReply; on: SideReply }, to: { off: SideReply; on: SideReply }) => {
    for (const s of ["off", "on"] as const) {
      into[s].selfUs += to[s].cpuUs - from[s].cpuUs;
      into[s].ops += to[s].ops - from[s].ops;
    }
  };
  for (let t = 1; t * TURN_MS <= durationMs; t++) {
    await turn();
    const now = await snapshot();
    const postgresUs = cpuUse(last, now, 1).postgresUs ?? 0;
    last = now;
    total[side].postgresUs += postgresUs;
    block[side].postgresUs += postgresUs;
    side = side === "off" ? "on" : "off";
    if (t % BLOCK_TURNS === 0) {
      const at = await read();
      add(block, blockFrom, at);
      blocks.push(perOp(block.on) / perOp(block.off));
      block = { off: emptySide(), on: emptySide() };
      blockFrom = at;
    }
  }
  sides.off.tell({ kind: "pause" });
  sides.on.tell({ kind: "pause" });
  add(total, totalFrom, await read());
  await both({ kind: "stop" });
  return { ...total, blocks: blocks.sort((a, b) => a - b) };
}

function render(rows: Row[], setup: string): string {
  const us = (n: number) => n.toFixed(0).padStart(7);
  const lines = [
    `Observability cost (${setup}): CPU per operation, the side's process + PostgreSQL, a process with observation off and one with it on taking turns every ${TURN_MS} ms`,
    `${"transport".padEnd(11)}${"scenario".padEnd(11)}${"off µs".padStart(8)}${"on µs".padStart(8)}${"node off".padStart(10)}${"node on".padStart(9)}  on/off  blocks' middle half  target`,
  ];
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
export async function runObservabilityBench(
  setup: Omit<SideSetup, "observing" | "sink">,
  rounds: number,
  load: Load,
  title: string,
): Promise<string> {
  const durationMs = 2 * rounds * load.durationMs;
  const sink = await otlpSink();
  const spawned = await Promise.allSettled([false, true].map((observing) => SideProcess.spawn({ ...setup, observing, sink: sink.url })));
  const sides = spawned.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  try {
    const failed = spawned.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    const [off, on] = sides as [SideProcess, SideProcess];
    const rows: Row[] = [];
    for (const transport of ["in-process", "http"] as const) {
      for (const scenario of ["fresh key", "replay"] as const) {
        rows.push({ transport, scenario, ...(await takingTurns({ off, on }, transport, scenario, durationMs, load)) });
      }
    }
    return render(rows, title);
  } finally {
    await Promise.all(sides.map((s) => s.exit()));
    await sink.close();
  }
}
