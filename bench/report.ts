/**
 * The printed result: one table of scenarios, then the ratios against their
 * targets, each beside the ratio its CPU per operation predicts (what bounds
 * it when the cores are the limit), and the CPU ratios themselves (what the
 * middleware adds to PostgreSQL's and Node's work per operation).
 */
import type { Burst } from "./burst";
import { median, type Sample } from "./measure";
import type { Pair } from "./scenarios";

/**
 * `writes` is plain → wrapped, `floor` is floor → wrapped (the same wrapped runs), `bound` plain → floor (the same
 * runs again), `recoverable` its floor → recoverable, `reads` is read → replay.
 */
export type TransportResult = { transport: string; writes: Pair; floor: Pair; bound: Pair; recoverable: Pair; reads: Pair; burst: Burst };

type Row = string[];

export function table(header: Row, rows: Row[], rightAligned: Set<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: Row) =>
    r
      .map((cell, i) => (rightAligned.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export const int = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "-" : Math.round(v).toLocaleString("en-US"));
const ms = (v: number) => (Number.isNaN(v) ? "-" : v.toFixed(2));
const pct = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "-" : `${Math.round(v * 100)}%`);

/** CPU of this process and PostgreSQL per operation: on shared cores, throughput is about its inverse. */
const cpuPerOp = (s: Sample) => (s.cpu?.postgresUs === undefined ? undefined : s.cpu.selfUs + s.cpu.postgresUs);

/** The stmts/op column is printed only for a run that counted statements (`--statements`). */
function scenarioRows(r: TransportResult, statements: boolean): Row[] {
  const counted = (cells: Row, perOp: string): Row => (statements ? [...cells.slice(0, -1), perOp, cells.at(-1)!] : cells);
  const row = (scenario: string, s: Sample): Row =>
    counted(
      [
        r.transport,
        scenario,
        int(s.opsPerSec),
        ms(s.p50),
        ms(s.p99),
        pct(s.cpu?.loopBusy),
        int(s.cpu?.selfUs),
        int(s.cpu?.postgresUs),
        pct(s.cpu?.otherShare),
        "",
      ],
      s.cpu?.statementsPerOp === undefined ? "-" : s.cpu.statementsPerOp.toFixed(2),
    );
  const b = r.burst;
  // What a loser costs: every call's CPU less the winners', each at the fresh-key write's price in this run.
  const perLoser = (all: number | undefined, winner: number | undefined) =>
    all === undefined || winner === undefined || b.losers.count === 0
      ? undefined
      : (all * b.keys * b.callers - winner * b.keys) / b.losers.count;
  const once = b.executions.min === 1 && b.executions.max === 1 && b.divergent === 0;
  const executions = b.executions.min === b.executions.max ? `${b.executions.min}` : `${b.executions.min}..${b.executions.max}`;
  return [
    row("plain mutation", r.writes.base),
    row("wrapped, fresh key", r.writes.subject),
    row("floor (plain + key row)", r.floor.base),
    row("recoverable, fresh key", r.recoverable.subject),
    row("recoverable floor (2 commits)", r.recoverable.base),
    row("plain read", r.reads.base),
    row("replay of stored key", r.reads.subject),
    counted(
      [
        r.transport,
        `burst ${b.callers}-way, losers`,
        "-",
        ms(b.losers.p50),
        ms(b.losers.p99),
        "-",
        int(perLoser(b.cpu.selfUs, r.writes.subject.cpu?.selfUs)),
        int(perLoser(b.cpu.postgresUs, r.writes.subject.cpu?.postgresUs)),
        pct(b.cpu.otherShare),
        `${b.keys} keys: executions/key ${executions} ${once ? "(ok)" : "(WRONG)"}, ${b.losers.count} replays (CPU: per loser, rolled-back work included), ` +
          `${b.divergent} divergent bodies; winner p50 ${ms(b.winner.p50)} ms`,
      ],
      "-",
    ),
  ];
}

type Target = {
  name: string;
  value: (r: TransportResult) => number;
  /** The rounds' own ratios, where the value is their median: their middle half is printed beside it. */
  rounds?: (r: TransportResult) => number[];
  min?: (transport: string) => number;
  predicted?: (r: TransportResult) => string;
  max?: boolean;
};

const predicted = (p: (r: TransportResult) => Pair) => (r: TransportResult) => {
  const base = cpuPerOp(p(r).base);
  const subject = cpuPerOp(p(r).subject);
  return base !== undefined && subject !== undefined ? (base / subject).toFixed(2) : "-";
};

/**
 * A throughput ratio (at least `min`, over HTTP `httpMin`): the median of the rounds' own, beside the ratio their CPU
 * per operation predicts.
 */
function throughput(name: string, p: (r: TransportResult) => Pair, min?: number, httpMin?: number): Target {
  const rounds = (r: TransportResult) => p(r).rounds.map((round) => round.subject.opsPerSec / round.base.opsPerSec);
  const bound = min === undefined ? {} : { min: (transport: string) => (transport === "http" ? (httpMin ?? min) : min) };
  return { name, value: (r) => median(rounds(r)), rounds, ...bound, predicted: predicted(p) };
}

/**
 * What `subject` costs per operation against `base`, in one CPU column (a lower one is better, at most `max`): the
 * median of the rounds' own ratios, like the throughput's, so a round the whole machine ran slow in (both sides' CPU
 * up) moves neither side's median alone.
 */
function cpu(name: string, p: (r: TransportResult) => Pair, of: (s: Sample) => number | undefined, max?: number): Target {
  const rounds = (r: TransportResult) => p(r).rounds.map((round) => (of(round.subject) ?? Number.NaN) / (of(round.base) ?? Number.NaN));
  return { name, value: (r) => median(rounds(r)), rounds, ...(max !== undefined && { min: () => max, max: true }) };
}

/**
 * The middle half of the rounds' ratios (first to third quartile): how far one run's median can be trusted. Run to
 * run, the same code's median moves about as far as this range is wide.
 */
function middleHalf(values: number[]): string {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length < 4) return "-";
  const at = (q: number) => sorted[Math.floor(q * (sorted.length - 1))]!;
  return `${at(0.25).toFixed(2)}-${at(0.75).toFixed(2)}`;
}

export const pgUs = (s: Sample) => s.cpu?.postgresUs;
export const nodeUs = (s: Sample) => s.cpu?.selfUs;
const mainUs = (s: Sample) => s.cpu?.mainUs;

const targets: Target[] = [
  throughput("wrapped/plain", (r) => r.writes, 0.8, 0.9),
  // The floor is the least any design with this guarantee can cost: the middleware is judged against it.
  throughput("wrapped/floor", (r) => r.floor, 0.95),
  // What wrapped/plain can reach at best: the middleware writes at least the floor's key row.
  throughput("floor/plain", (r) => r.bound),
  throughput("replay/read", (r) => r.reads, 0.9),
  // p99s as ratio: at most 1.5 (the one target where lower is better).
  { name: "replay p99/read p99", value: (r) => r.reads.subject.p99 / r.reads.base.p99, min: () => 1.5, max: true },
  // CPU per operation, the ratios to trust on a busy machine: what the middleware adds, side by side.
  cpu("wrapped/floor pg us/op", (r) => r.floor, pgUs, 1.05),
  cpu("wrapped/floor node us/op", (r) => r.floor, nodeUs, 1.1),
  // Of that, the main thread's alone (the JavaScript): the rest is V8's helper threads (the collector, background compilation).
  cpu("wrapped/floor node main us/op", (r) => r.floor, mainUs),
  cpu("replay/read node+pg us/op", (r) => r.reads, cpuPerOp, 1.2),
  cpu("recoverable/floor pg us/op", (r) => r.recoverable, pgUs, 1.1),
  cpu("recoverable/floor node us/op", (r) => r.recoverable, nodeUs, 1.1),
  cpu("recoverable/floor node main us/op", (r) => r.recoverable, mainUs),
];

/** A ratio's value, its target and whether it was met: `atMost` for a bound from above (lower is better). */
export function judged(value: number, bound: number | undefined, atMost = false): Row {
  const target = bound === undefined ? "-" : `${atMost ? "<=" : ">="} ${bound.toFixed(2)}`;
  const met = bound === undefined || Number.isNaN(value) ? "" : (atMost ? value <= bound : value >= bound) ? "met" : "missed";
  return [Number.isNaN(value) ? "-" : value.toFixed(2), target, met];
}

export function render(results: TransportResult[], setup: string): string {
  const statements = results.some((r) => r.writes.subject.cpu?.statementsPerOp !== undefined);
  const measured = ["ops/s", "p50 ms", "p99 ms", "loop", "node us/op", "pg us/op", "other", ...(statements ? ["stmts/op"] : [])];
  const header = ["transport", "scenario", ...measured, "notes"];
  const scenarios = table(
    header,
    results.flatMap((r) => scenarioRows(r, statements)),
    new Set(measured.map((_, i) => i + 2)),
  );
  const ratioRows = results.flatMap((r) =>
    targets.map((t) => [
      r.transport,
      t.name,
      ...judged(t.value(r), t.min?.(r.transport), t.max),
      t.rounds ? middleHalf(t.rounds(r)) : "-",
      t.predicted?.(r) ?? "-",
    ]),
  );
  const ratios = table(
    ["transport", "ratio", "value", "target", "", "rounds' middle half", "cpu/op predicts"],
    ratioRows,
    new Set([2, 5, 6]),
  );
  const others = results
    .flatMap((r) => [r.writes, r.floor, r.recoverable, r.reads].flatMap((p) => [p.base, p.subject]))
    .map((s) => s.cpu?.otherShare ?? 0);
  const busiest = Math.max(...others);
  const warning =
    busiest > 0.1
      ? `\nOther processes used up to ${pct(busiest)} of the machine during a measured window: throughput and its ratios are disturbed; CPU per operation much less so.\n`
      : "";
  return `${setup}\n\n${scenarios}\n\n${ratios}\n${warning}`;
}
