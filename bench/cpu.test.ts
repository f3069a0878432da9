/** What a window's PostgreSQL CPU counts when processes come and go inside it. */
import { describe, expect, it } from "vitest";
import { postgresUsed, type PostgresProcesses } from "./cpu";

const at = (entries: [pid: number, cpu: number, start: number][]): PostgresProcesses =>
  new Map(entries.map(([pid, cpu, start]) => [pid, { cpu, start }]));

describe("postgresUsed", () => {
  const windowStart = 1_000_000;

  it("adds what each process used between the edges, not its life before", () => {
    expect(postgresUsed(at([[1, 5_000, 10]]), at([[1, 7_500, 10]]), windowStart)).toBe(2_500);
  });

  it("does not subtract a process that ended inside the window", () => {
    expect(
      postgresUsed(
        at([
          [1, 5_000, 10],
          [2, 90_000, 10],
        ]),
        at([[1, 7_500, 10]]),
        windowStart,
      ),
    ).toBe(2_500);
  });

  it("adds all a process used when it started inside the window, nothing when it was only missed at the first edge", () => {
    const to = at([
      [3, 4_000, windowStart + 10],
      [4, 80_000, 10],
    ]);
    expect(postgresUsed(at([]), to, windowStart)).toBe(4_000);
  });

  it("treats a pid reused by a new process as that new process", () => {
    expect(postgresUsed(at([[5, 50_000, 10]]), at([[5, 3_000, windowStart + 5]]), windowStart)).toBe(3_000);
  });
});
