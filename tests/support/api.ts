/** Calling the app's REST surface in-process, as a tenant, and reading what it wrote. */
import { TRPCError } from "@trpc/server";
import { expect } from "vitest";
import { database } from "../../db/client";
import { app, type App } from "../../server/app";
import { createTenant } from "../../server/tenants/service";

export type Tenant = { id: string; name: string; token: string };

export async function newTenant(name = "test"): Promise<Tenant> {
  const { tenant, token } = await createTenant(database().db, name);
  return { ...tenant, token };
}

export type Answer = { status: number; text: string; body: Record<string, unknown> & { [k: string]: unknown }; headers: Headers };

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : {}, headers: res.headers };
}

/** `via`: an app of the test's own (tests/support/app.ts), else the process's. */
export function api(tenant: Tenant, via: App = app) {
  const auth = { authorization: `Bearer ${tenant.token}` };
  return {
    post: async (path: string, body: unknown, key?: string | null, extra: Record<string, string> = {}) =>
      answer(
        await via.handleRest(
          new Request(`http://test/api${path}`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}), ...extra },
            body: typeof body === "string" ? body : JSON.stringify(body),
          }),
        ),
      ),
    get: async (path: string) => answer(await via.handleRest(new Request(`http://test/api${path}`, { headers: auth }))),
  };
}

export const newKey = (label = "k") => `${label}-${crypto.randomUUID()}`;

export async function ledgerFor(tenantId: string, key: string) {
  return database().sql<{ ledger_account: string; direction: string; amount_minor: string; transaction_id: string }[]>`
    select ledger_account, direction, amount_minor, transaction_id from ledger_entries
    where tenant_id = ${tenantId} and idempotency_key = ${key} order by id`;
}

/** Every transaction balances: the sum of debits equals the sum of credits. */
export async function unbalancedTransactions(tenantId: string) {
  return database().sql`
    select transaction_id from ledger_entries where tenant_id = ${tenantId}
    group by transaction_id
    having sum(case when direction = 'debit' then amount_minor else -amount_minor end) <> 0`;
}

/** Resolves once `count` callers have arrived, so they all start together. */
export function barrier(count: number) {
  let arrived = 0;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return async () => {
    arrived += 1;
    if (arrived === count) open();
    await gate;
  };
}

/** The TRPCError a call failed with (fails the test if it did not fail that way). */
export async function trpcError(promise: Promise<unknown>): Promise<TRPCError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return error as TRPCError;
}
