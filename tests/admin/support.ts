/**
 * Helpers for the admin integration tests: callers with and without an
 * admin session, and idempotency keys seeded straight into the table, each
 * test on tenants of its own so parallel test files never see its rows.
 *
 * Each test file sets ADMIN_PASSWORD by mocking `server/env` (the environment
 * is parsed once per process, before a test could change it):
 *
 *   vi.mock("../../server/env", async (original) => {
 *     const actual = await original<typeof import("../../server/env")>();
 *     return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
 *   });
 *
 * Sessions belong to operator accounts made here (`newOperator`), each
 * under a fresh name, so files running side by side never share one.
 */
import { database } from "../../db/client";
import { app, type App } from "../../server/app";
import type { Tenant } from "../../server/context";
import { randomUUID } from "node:crypto";
import { addOperator, OperatorRole, type Operator } from "../../server/admin/operators";
import { ADMIN_COOKIE, issueSession } from "../../server/admin/session";
import type { KeyState } from "@exactly-once/trpc";

/** What the dashboard's own requests carry: its origin and JSON (admin mutations need both). */
export const SAME_ORIGIN = { host: "app.test", origin: "http://app.test", "content-type": "application/json" };

/** A caller with exactly these request headers, of the process's app or of `via` (tests/support/app.ts). */
export async function callerWithExactly(headers: Record<string, string>, tenant: Tenant | null = null, via: App = app) {
  return via.createCaller(await via.createContextInner({ headers: new Headers(headers), tenant }));
}

/** A caller with these headers on top of SAME_ORIGIN, as the dashboard's own requests. */
export const callerWith = (headers: Record<string, string> = {}, tenant: Tenant | null = null, via?: App) =>
  callerWithExactly({ ...SAME_ORIGIN, ...headers }, tenant, via);

export const OPERATOR_PASSWORD = "test-operator-password";

/** An operator account of the test's own (a fresh name), with OPERATOR_PASSWORD. */
export const newOperator = (role: OperatorRole = OperatorRole.Operator, prefix = "op"): Promise<Operator> =>
  addOperator(database().db, `${prefix}-${randomUUID().slice(0, 8)}`, role, OPERATOR_PASSWORD);

let fileOperator: Promise<Operator> | undefined;

/** A session cookie, of `operator` or of an `operator`-role account this test file shares. */
export const sessionCookie = async (now?: number, operator?: Operator, via: App = app) =>
  `${ADMIN_COOKIE}=${(await issueSession(database().db, via.settings, operator ?? (await (fileOperator ??= newOperator())), now)).token}`;

/** A caller signed in as admin. */
export const adminCaller = async (via: App = app) => callerWith({ cookie: await sessionCookie(undefined, undefined, via) }, null, via);

export type SeedKey = {
  key: string;
  state?: KeyState;
  procedure?: string;
  /** Seconds before now the key was created; later seeds in a list should be younger to read naturally. */
  ageSeconds?: number;
  /** Seconds until expiry; negative for an expired key. */
  expiresInSeconds?: number;
  /** In-progress keys: seconds until the lease ends; negative for a lease already over (stale). */
  leaseSeconds?: number;
  replays?: number;
};

export async function seedKeys(tenantId: string, seeds: SeedKey[]): Promise<void> {
  const { sql } = database();
  for (const s of seeds) {
    const state = s.state ?? "completed";
    const done = state !== "in_progress";
    await sql`
      insert into idempotency_keys
        (tenant_id, key, procedure, fingerprint, request, state, locked_until, response_status, response_body,
         created_at, expires_at, replay_count, last_replayed_at)
      values (${tenantId}, ${s.key}, ${s.procedure ?? "payments.create"},
              encode(sha256(convert_to(${s.key}, 'UTF8')), 'hex'), ${`payments.create\n{"key":"${s.key}"}`}, ${state},
              ${done ? null : sql`now() + ${s.leaseSeconds ?? 30} * interval '1 second'`},
              ${done ? (state === "completed" ? 201 : 402) : null}, ${done ? `{"key":"${s.key}"}` : null},
              now() - ${s.ageSeconds ?? 60} * interval '1 second', now() + ${s.expiresInSeconds ?? 3600} * interval '1 second',
              ${s.replays ?? 0}, ${s.replays ? sql`now()` : null})`;
  }
}
