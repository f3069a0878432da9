/**
 * Whether requests are observed (metrics and spans): on unless turned off.
 * `npm run bench -- --observability` turns it off in the process that runs
 * its baseline; the process beside it, observing, is otherwise the same.
 * Kept on `globalThis` like the registry, so every bundle sees one answer.
 */
const holder = globalThis as { __eoObserving?: boolean };

export const observing = (): boolean => holder.__eoObserving !== false;

export function setObserving(on: boolean): void {
  holder.__eoObserving = on;
}
