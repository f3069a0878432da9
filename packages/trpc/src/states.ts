/**
 * The states a key's row can be in, and who finished it: plain values, so the
 * server side needs no Drizzle (the table definition, schema.ts, is the
 * optional `./drizzle` entry point).
 */
export const KeyState = {
  InProgress: "in_progress",
  Completed: "completed",
  Failed: "failed",
} as const;
export type KeyState = (typeof KeyState)[keyof typeof KeyState];

/** Who finished a key that its client left behind. */
export const CompletedBy = { Completer: "completer" } as const;
export type CompletedBy = (typeof CompletedBy)[keyof typeof CompletedBy];
