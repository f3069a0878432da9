/**
 * A run's sequence diagram: four lanes (browser, app, database, provider),
 * one arrow per recorded step, in recorded order with its time in ms. Hand
 * drawn SVG: the steps are a flat list, so a few lines of layout beat a
 * diagram library's bundle, and plain SVG attributes need nothing the CSP
 * forbids. The table under it is the same content as text (screen readers,
 * tests, copy-paste); both print.
 */
import type { LabReport } from "./lab-api";

const LANES = ["browser", "app", "database", "provider"] as const;
// About as wide as one side's card at 1280 px, so the diagram is drawn near its real size and its text stays legible.
const LANE_WIDTH = 140;
const ROW = 30;
const TOP = 40;
const LEFT = 56;
/** Longer labels are cut in the drawing (the table below has them whole); a self-arrow's label has less room. */
const MAX_LABEL = 66;
const MAX_SELF_LABEL = 50;

const cut = (label: string, max: number) => (label.length > max ? `${label.slice(0, max - 1)}…` : label);

const laneX = (lane: string) => LEFT + LANES.indexOf(lane as (typeof LANES)[number]) * LANE_WIDTH + LANE_WIDTH / 2;

export function SequenceDiagram({ steps, title, id }: { steps: LabReport["steps"]; title: string; id: string }) {
  const marker = `arrow-${id}`;
  const height = TOP + steps.length * ROW + 20;
  const width = LEFT + LANES.length * LANE_WIDTH;
  return (
    <figure className="sequence">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${title}: sequence diagram, ${steps.length} steps; the table below lists them`} className="sequence-svg">
        {LANES.map((lane) => (
          <g key={lane}>
            <text x={laneX(lane)} y={20} textAnchor="middle" fontWeight="700" fontSize="13" fill="#1f2328">
              {lane}
            </text>
            <line x1={laneX(lane)} y1={28} x2={laneX(lane)} y2={height - 10} stroke="#8c959f" strokeDasharray="4 4" />
          </g>
        ))}
        {steps.map((step, i) => {
          const y = TOP + i * ROW + 12;
          const x1 = laneX(step.from);
          const x2 = laneX(step.to);
          const self = x1 === x2;
          const labelX = self ? x1 + 24 : (x1 + x2) / 2;
          return (
            <g key={i}>
              <text x={2} y={y + 4} fontSize="10.5" fill="#57606a">
                {step.t.toFixed(1)} ms
              </text>
              {self ? (
                <path d={`M ${x1} ${y - 6} h 18 v 12 h -18`} fill="none" stroke="#b3261e" strokeWidth="1.5" />
              ) : (
                <line x1={x1} y1={y} x2={x2 + (x2 > x1 ? -6 : 6)} y2={y} stroke="#0b5cad" strokeWidth="1.5" markerEnd={`url(#${marker})`} />
              )}
              <text x={labelX} y={self ? y + 4 : y - 4} fontSize="11" textAnchor={self ? "start" : "middle"} fill="#1f2328">
                {cut(step.label, self ? MAX_SELF_LABEL : MAX_LABEL)}
              </text>
            </g>
          );
        })}
        <defs>
          <marker id={marker} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" fill="#0b5cad" />
          </marker>
        </defs>
      </svg>
      <figcaption className="visually-hidden">{title}</figcaption>
      <table className="table steps-table">
        <caption className="small muted">{title}: every recorded step, in order</caption>
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
              <td>{step.from}</td>
              <td>{step.to}</td>
              <td className="wrap">{step.label}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
