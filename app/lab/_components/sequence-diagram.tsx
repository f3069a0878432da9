/**
 * A run's sequence diagram: a lane per part (browser, the completer when it
 * took part, app, database, provider), one arrow per recorded step in
 * recorded order. Hand drawn SVG: the steps are a flat list, so a few lines
 * of layout beat a diagram library's bundle, and plain SVG attributes need
 * nothing the CSP forbids.
 *
 * Drawn at its real size (12 px text and up) where the card has room, with
 * each step's words in a column of their own right of the lanes, wrapped
 * there: a label never crosses a lifeline and is never cut; slightly
 * narrower cards scale it down a little. Where the card is narrower still (a
 * phone), the same steps read as a list, top to bottom: the page never
 * scrolls sideways and no words hide in an inner scroller. Rows follow the
 * order; a pause longer than BREAK_MS between two steps is drawn as a visible
 * break ("… 3.0 s …"), so a wait never looks like a step. A duplicate's wait
 * for the key is recorded when it ended, after the steps it waited for, and
 * drawn as a bar on the app's lifeline reaching back to where it began. The
 * legend explains only what this run shows. The table under it is the same
 * content as text (screen readers, tests, copy-paste), folded away by
 * default (opened, it prints with the diagram).
 */
import type { LabReport } from "./lab-api";
import styles from "./lab.module.css";
import { has, WAITED } from "./story";

type Step = LabReport["steps"][number];
type Lane = (typeof LANES)[number];

const LANES = ["browser", "completer", "app", "database", "provider"] as const;
const FONT = 12;
const LINE = 16;
const TIME_WIDTH = 56;
/**
 * Room per lane. A bold label ("completer", the longest, is about 70 px at
 * 12 px) is wider than a lane, so neighbouring labels sit on two lines in
 * turn and never meet; the diagram stays narrow enough for half a 1280 px page.
 */
const LANE_GAP = 64;
const LABEL_WIDTH = 204;
/** Characters per label line at 12 px in the label column. */
const LABEL_CHARS = 29;
const HEAD = 44;
const ROW_PAD = 10;
const BREAK_HEIGHT = 24;
/** A gap this long between two steps is drawn as a break with its length. */
const BREAK_MS = 250;

const COLOR = {
  text: "#1f2328",
  muted: "#57606a",
  line: "#8c959f",
  arrow: "#0b5cad",
  inside: "#b3261e",
  completer: "#6639ba",
  break: "#f3f4f6",
  wait: "#bf8700",
};

/** The lanes as a shopper names them (the app is "the shop"); the technical view keeps the parts' own names. */
const laneName = (lane: string, technical: boolean) => (!technical && lane === "app" ? "shop" : lane);

/** A step's words in the chosen view. */
const wordsOf = (step: Step, technical: boolean) => (technical ? step.label : step.plain);

/** Word-wraps `text` to lines of at most `width` characters (a longer word is split, not cut). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ").flatMap((w) => w.match(new RegExp(`.{1,${width}}`, "g")) ?? [""])) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  return [...lines, line];
}

const seconds = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

/** Times from the moment request #1 arrived (the browser's attempts count from the moment it left). */
function rebased(steps: Step[]): Step[] {
  const zero = steps.find((s) => s.from === "browser")?.t ?? steps[0]?.t ?? 0;
  return steps.map((s) => ({ ...s, t: Math.round((s.t - zero) * 10) / 10 }));
}

type StepLine = { kind: "step"; step: Step; y: number; lines: string[] };
type Row = StepLine | { kind: "break"; y: number; gapMs: number };

/** Where each wait is drawn: from the first row at or after its start (its own row if none) down to its own row, where it ended. */
function waitBars(rows: Row[]): { from: number; to: number; ms: number }[] {
  const steps = rows.filter((r): r is StepLine => r.kind === "step");
  return steps.flatMap((row) => {
    const ms = Number(WAITED.exec(row.step.label)?.[1] ?? NaN);
    if (Number.isNaN(ms)) return [];
    const start = steps.find((r) => r.step.t >= row.step.t - ms) ?? row;
    return [{ from: Math.min(start.y + FONT / 2, row.y), to: row.y + FONT, ms }];
  });
}

function layout(steps: Step[], technical: boolean): { rows: Row[]; height: number } {
  const rows: Row[] = [];
  let y = HEAD + 8;
  steps.forEach((step, i) => {
    const gap = i > 0 ? step.t - steps[i - 1]!.t : 0;
    if (gap > BREAK_MS) {
      rows.push({ kind: "break", y, gapMs: gap });
      y += BREAK_HEIGHT;
    }
    const lines = wrap(wordsOf(step, technical), LABEL_CHARS);
    rows.push({ kind: "step", step, y, lines });
    y += lines.length * LINE + ROW_PAD;
  });
  return { rows, height: y + 8 };
}

type DiagramProps = {
  steps: Step[];
  title: string;
  id: string;
  /** The middleware's own terms instead of plain words. */
  technical: boolean;
};

export function SequenceDiagram({ steps: recorded, title, id, technical }: DiagramProps) {
  const steps = rebased(recorded);
  const { rows, height } = layout(steps, technical);
  const waits = waitBars(rows);
  const shows = shown(steps, rows, waits.length > 0);
  const lanes = LANES.filter((lane) => shows.completer || lane !== "completer");
  const laneX = (lane: string) => TIME_WIDTH + LANE_GAP / 2 + lanes.indexOf(lane as Lane) * LANE_GAP;
  const lanesRight = TIME_WIDTH + lanes.length * LANE_GAP;
  const width = lanesRight + LABEL_WIDTH;
  const marker = `arrow-${id}`;
  return (
    <figure className={`sequence ${styles.figure}`}>
      <div className={`sequence-scroll ${styles.drawing}`}>
        <svg
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-label={`${title}: sequence diagram, ${steps.length} steps; the table below lists them`}
          className={`sequence-svg ${styles.svg}`}
          fontSize={FONT}
        >
          {lanes.map((lane, i) => (
            <g key={lane}>
              <text
                x={laneX(lane)}
                y={i % 2 === 0 ? 16 : 32}
                textAnchor="middle"
                fontWeight="700"
                fill={lane === "completer" ? COLOR.completer : COLOR.text}
              >
                {laneName(lane, technical)}
              </text>
              <line
                x1={laneX(lane)}
                y1={i % 2 === 0 ? 20 : HEAD - 8}
                x2={laneX(lane)}
                y2={height - 4}
                stroke={COLOR.line}
                strokeDasharray="4 4"
              />
            </g>
          ))}
          {waits.map((w, i) => (
            <rect
              key={`wait-${i}`}
              className="sequence-wait"
              x={laneX("app") - 5}
              y={w.from}
              width={10}
              height={w.to - w.from}
              fill={COLOR.wait}
              fillOpacity={0.35}
              stroke={COLOR.wait}
            >
              <title>{`a repeat waited ${w.ms} ms, from here until the request it waited for had finished`}</title>
            </rect>
          ))}
          {rows.map((row, i) =>
            row.kind === "break" ? (
              <g key={i}>
                <rect x={0} y={row.y} width={width} height={BREAK_HEIGHT - 6} fill={COLOR.break} />
                <text
                  x={TIME_WIDTH + (lanes.length * LANE_GAP) / 2}
                  y={row.y + 13}
                  textAnchor="middle"
                  fill={COLOR.muted}
                  fontStyle="italic"
                >
                  … {seconds(row.gapMs)} …
                </text>
              </g>
            ) : (
              <StepRow key={i} row={row} x1={laneX(row.step.from)} x2={laneX(row.step.to)} labelX={lanesRight + 6} marker={marker} />
            ),
          )}
          <defs>
            {[COLOR.arrow, COLOR.completer].map((color) => (
              <marker
                key={color}
                id={`${marker}-${color.slice(1)}`}
                viewBox="0 0 10 10"
                refX="9"
                refY="5"
                markerWidth="7"
                markerHeight="7"
                orient="auto-start-reverse"
              >
                <path d="M 0 0 L 10 5 L 0 10 z" fill={color} />
              </marker>
            ))}
          </defs>
        </svg>
      </div>
      <StepList rows={rows} technical={technical} />
      <figcaption className="visually-hidden">{title}</figcaption>
      <Legend shows={shows} technical={technical} />
      <details className="steps-details">
        <summary className="small">Every step as text ({steps.length})</summary>
        <table className="table steps-table">
          <caption className="small muted">{title}: every recorded step, in order (ms after request #1 arrived)</caption>
          <thead>
            <tr>
              <th scope="col" className="num">
                ms
              </th>
              <th scope="col">from</th>
              <th scope="col">to</th>
              <th scope="col">step</th>
            </tr>
          </thead>
          <tbody>
            {steps.map((step, i) => (
              <tr key={i}>
                <td className="num">{step.t.toFixed(1)}</td>
                <td>{laneName(step.from, technical)}</td>
                <td>{laneName(step.to, technical)}</td>
                <td className="wrap">{wordsOf(step, technical)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/** The same rows as a list, for a card too narrow for the drawing (CSS shows one or the other). */
function StepList({ rows, technical }: { rows: Row[]; technical: boolean }) {
  return (
    <ol className={styles.steps}>
      {rows.map((row, i) =>
        row.kind === "break" ? (
          <li key={i} className={styles.pause}>
            … {seconds(row.gapMs)} later …
          </li>
        ) : (
          <li key={i} className={WAITED.test(row.step.label) ? `${styles.step} ${styles.waited}` : styles.step}>
            <span className={styles.when}>{row.step.t.toFixed(0)} ms</span>
            <span className={styles.lanes}>
              {row.step.from === row.step.to
                ? `inside the ${laneName(row.step.from, technical)}`
                : `${laneName(row.step.from, technical)} → ${laneName(row.step.to, technical)}`}
            </span>
            <span className={styles.words}>{wordsOf(row.step, technical)}</span>
          </li>
        ),
      )}
    </ol>
  );
}

function StepRow({ row, x1, x2, labelX, marker }: { row: StepLine; x1: number; x2: number; labelX: number; marker: string }) {
  const { step, y, lines } = row;
  const arrowY = y + FONT - 4;
  const color = touchesCompleter(step) ? COLOR.completer : x1 === x2 ? COLOR.inside : COLOR.arrow;
  return (
    <g>
      <text x={TIME_WIDTH - 8} y={y + FONT - 1} textAnchor="end" fill={COLOR.muted}>
        {step.t.toFixed(1)}
      </text>
      {x1 === x2 ? (
        <path d={`M ${x1} ${arrowY - 5} h 16 v 10 h -16`} fill="none" stroke={color} strokeWidth="1.5" />
      ) : (
        <line
          x1={x1}
          y1={arrowY}
          x2={x2 + (x2 > x1 ? -4 : 4)}
          y2={arrowY}
          stroke={color}
          strokeWidth="1.5"
          markerEnd={`url(#${marker}-${color.slice(1)})`}
        />
      )}
      <text x={labelX} y={y + FONT - 1} fill={COLOR.text}>
        {lines.map((line, i) => (
          <tspan key={i} x={labelX} dy={i === 0 ? 0 : LINE}>
            {line}
          </tspan>
        ))}
      </text>
    </g>
  );
}

/** What a legend entry explains, and whether this run shows it. */
type Shown = ReturnType<typeof shown>;

const touchesCompleter = (s: Step) => s.from === "completer" || s.to === "completer";

function shown(steps: Step[], rows: Row[], wait: boolean) {
  return {
    fence: has(steps, /\bfence \d/),
    takeover: has(steps, /^key takeover/),
    recoveryPoint: has(steps, /recovery point|^phase /),
    pause: rows.some((r) => r.kind === "break"),
    loop: steps.some((s) => s.from === s.to),
    completer: steps.some(touchesCompleter),
    wait,
  };
}

/** `view`: the legend of the plain words, of the technical terms, or of both (what the drawing itself shows). */
const LEGEND: { show: keyof Shown; view?: "plain" | "technical"; term: string; meaning: string }[] = [
  {
    show: "wait",
    term: "a yellow bar",
    meaning:
      "a repeat waiting for the request that holds its key, from when it arrived to when that request had finished; then it gets the same answer.",
  },
  {
    show: "takeover",
    view: "plain",
    term: "takes the payment over",
    meaning:
      "the attempt holding the key went quiet for too long, so the next one carries on from where it stopped; the quiet one can no longer change anything, even if it wakes up late.",
  },
  {
    show: "recoveryPoint",
    view: "plain",
    term: "a safe point",
    meaning:
      "a step saved on its own (the order, the charge's result): whoever takes over resumes after it and never does it twice, and the provider, asked again with the payment's own key, answers from its record.",
  },
  {
    show: "fence",
    view: "technical",
    term: "fence N",
    meaning:
      "how many times the key has been taken up; only the attempt holding the newest fence may write, so a stopped worker that wakes up late changes nothing.",
  },
  {
    show: "recoveryPoint",
    view: "technical",
    term: "recovery point",
    meaning:
      "a phase committed on its own; whoever takes the key over resumes after it and never repeats it (the provider gets the same key again and answers from its record).",
  },
  { show: "pause", term: "… 3.0 s …", meaning: "time passing between two steps, drawn as a break: rows follow the order, not the clock." },
  { show: "loop", term: "a loop on one lane", meaning: "something inside that part, such as the simulated crash." },
  { show: "completer", term: "purple arrows", meaning: "the completer: the server finishing a payment whose shopper did not come back." },
];

function Legend({ shows, technical }: { shows: Shown; technical: boolean }) {
  const view = technical ? "technical" : "plain";
  const entries = LEGEND.filter((e) => shows[e.show] && (e.view === undefined || e.view === view));
  if (entries.length === 0) return null;
  return (
    <dl className={`sequence-legend small ${styles.legend}`} aria-label="What this diagram shows">
      {entries.map((e) => (
        <div key={e.term}>
          <dt>{e.term}</dt>
          <dd>{e.meaning}</dd>
        </div>
      ))}
    </dl>
  );
}
