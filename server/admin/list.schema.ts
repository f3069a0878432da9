/** Input of `admin.keys.list`: filters, sort and an opaque keyset cursor. */
import { z } from "zod";
import { strictInput } from "../input";
import { InvalidFieldError } from "../errors";
import { DISPLAY_STATES } from "./key-state";

export const KeySort = { CreatedDesc: "created_desc", CreatedAsc: "created_asc" } as const;
export type KeySort = (typeof KeySort)[keyof typeof KeySort];

export const listKeysInput = strictInput({
  /** A state as the dashboard shows it: in_progress, completed and failed exclude expired keys. */
  state: z.enum(DISPLAY_STATES).optional(),
  tenantId: z.string().min(1).max(100).optional(),
  procedure: z.string().min(1).max(200).optional(),
  /** In progress past its lease: a holder stopped mid-request. */
  staleOnly: z.boolean().default(false),
  /** Past retention; with a stored state it narrows to the expired keys that were in that state. */
  expiredOnly: z.boolean().default(false),
  /** Keys starting with this text (keys are visible ASCII, so no normalisation applies). */
  keyPrefix: z.string().min(1).max(255).optional(),
  sort: z.enum([KeySort.CreatedDesc, KeySort.CreatedAsc]).default(KeySort.CreatedDesc),
  limit: z.number().int().min(1).max(200).default(50),
  /** `nextCursor` of the previous page, for the same filters and sort. */
  cursor: z.string().max(600).optional(),
});
export type ListKeysInput = z.infer<typeof listKeysInput>;

/** A position in (created_at, key) order: the last row of a page. */
export type KeyCursor = { createdAt: string; key: string };

const ISO_MICROS = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
/** Keys are at most 255 characters (the middleware's rule); a cursor's key is no longer. */
const MAX_CURSOR_KEY = 255;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

export const encodeCursor = (c: KeyCursor) => Buffer.from(JSON.stringify([c.createdAt, c.key]), "utf8").toString("base64url");

/**
 * A timestamp PostgreSQL can read back: the shape alone lets through month 13
 * or year 0000 (there is no year 0), which `::timestamptz` then refuses as a
 * 500. The date must survive a round trip through `Date` unchanged.
 */
function isTimestamp(createdAt: string): boolean {
  const match = ISO_MICROS.exec(createdAt);
  if (!match || Number(match[1]) < 1) return false;
  const millis = `${createdAt.slice(0, 23)}Z`;
  const time = Date.parse(millis);
  return Number.isFinite(time) && new Date(time).toISOString() === millis;
}

/** A key as the database may hold one: bounded, no NUL or other control character (PostgreSQL refuses NUL in text). */
const isCursorKey = (key: string) => key.length >= 1 && key.length <= MAX_CURSOR_KEY && !CONTROL.test(key);

/** The position a cursor names, checked in full before it reaches SQL; any defect is a 400 naming `cursor`. */
export function decodeCursor(cursor: string): KeyCursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(value) && value.length === 2) {
      const [createdAt, key] = value as unknown[];
      if (typeof createdAt === "string" && isTimestamp(createdAt) && typeof key === "string" && isCursorKey(key)) return { createdAt, key };
    }
  } catch {
    // Falls through to the one error below: a cursor is opaque, so any defect is the same defect.
  }
  throw new InvalidFieldError("cursor", "is not a cursor this endpoint returned");
}
