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

const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export const encodeCursor = (c: KeyCursor) => Buffer.from(JSON.stringify([c.createdAt, c.key]), "utf8").toString("base64url");

export function decodeCursor(cursor: string): KeyCursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(value) && value.length === 2) {
      const [createdAt, key] = value as unknown[];
      if (typeof createdAt === "string" && ISO_MICROS.test(createdAt) && typeof key === "string") return { createdAt, key };
    }
  } catch {
    // Falls through to the one error below: a cursor is opaque, so any defect is the same defect.
  }
  throw new InvalidFieldError("cursor", "is not a cursor this endpoint returned");
}
