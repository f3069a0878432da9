/**
 * The runtime's `admitNewKey`: the app's say on a new key (a cap on the keys
 * a tenant holds), asked only when a call would insert a key row its tenant
 * does not hold (none, or an expired one). A key it holds behaves as without
 * the hook: a replay (also after a wrong `Idempotency-Attempt: 1`), a wait
 * that ends in `409`, a takeover. Counted in hook calls, handler runs and
 * rows, on both flavours.
 */
import { IDEMPOTENCY_ATTEMPT_HEADER, createIdempotencyProcedures, type IdempotencyContext } from "@exactly-once/trpc";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { idempotencyRuntime, restHandlerFor } from "../../server/app";
import { DomainError } from "../../server/errors";
import type { RestMeta } from "../../server/meta";
import { router, tenantProcedure } from "../../server/trpc";
import { effects, effectsFor, ensureEffectsTable, input, keyRow, newTenant, park, hooks, uniqueKey, type TestTenant } from "./fixture";

/** Keys the hook was asked about, and those it refuses. */
const asked: string[] = [];
const refusing = new Set<string>();

function admitNewKey(request: IdempotencyContext) {
  const key = request.headers.get("idempotency-key")!;
  asked.push(key);
  if (refusing.has(key)) throw new DomainError("key-quota-exceeded", 429, "A test cap.", { retryAfter: 10 });
}

const capped = createIdempotencyProcedures({ ...idempotencyRuntime, admitNewKey });
const rest = (path: `/${string}`): { rest: RestMeta } => ({ rest: { method: "POST", path, status: 201, summary: "test", tags: ["test"] } });

const cappedRouter = router({
  atomic: tenantProcedure
    .meta({ idempotent: true, ...rest("/c/atomic") })
    .input(input)
    .concat(capped.atomic({ waitMs: 0 }))
    .mutation(async ({ ctx, input: i }) => {
      await hooks.get(i.tag)?.("before");
      const [row] = await ctx.idempotency.tx
        .insert(effects)
        .values({ tenantId: ctx.tenant.id, key: ctx.idempotency.key, note: i.tag, amount: i.amount })
        .returning();
      return { id: row!.id, tag: i.tag };
    }),
  recoverable: tenantProcedure
    .meta({ idempotent: true, ...rest("/c/recoverable") })
    .input(input)
    .concat(capped.recoverable({ waitMs: 0 }))
    .mutation(async ({ ctx, input: i }) => {
      const h = ctx.idempotency;
      const id = await h.phase("recorded", async (tx) => {
        const [row] = await tx.insert(effects).values({ tenantId: ctx.tenant.id, key: h.key, note: i.tag, amount: i.amount }).returning();
        return row!.id;
      });
      await hooks.get(i.tag)?.("between");
      return { id, tag: i.tag };
    }),
});
const handler = restHandlerFor(cappedRouter);

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("admit-new-key");
});

async function send(path: string, key: string, extra: Record<string, string> = {}) {
  const headers = new Headers({
    ...extra,
    authorization: `Bearer ${tenant.token}`,
    "content-type": "application/json",
    "idempotency-key": key,
  });
  const res = await handler(
    new Request(`http://test/api${path}`, { method: "POST", headers, body: JSON.stringify({ tag: key, amount: 1 }) }),
  );
  return {
    status: res.status,
    body: await res.text(),
    replayed: res.headers.get("idempotent-replayed") === "true",
    retryAfter: res.headers.get("retry-after"),
  };
}
const askedAbout = (key: string) => asked.filter((k) => k === key).length;

describe.each(["/c/atomic", "/c/recoverable"])("admitNewKey on %s", (path) => {
  it("is asked for a new key; its refusal is the answer, and nothing is claimed or run", async () => {
    const key = uniqueKey("refused");
    refusing.add(key);
    for (const extra of [{}, { [IDEMPOTENCY_ATTEMPT_HEADER]: "1" }] as Record<string, string>[]) {
      const res = await send(path, key, extra);
      expect(res.status).toBe(429);
      expect(JSON.parse(res.body)).toMatchObject({ type: "/problems/key-quota-exceeded" });
      expect(res.retryAfter).toBe("10");
    }
    expect(askedAbout(key)).toBe(2);
    expect(await keyRow(tenant.id, key)).toBeUndefined();
    expect(await effectsFor(tenant.id, key)).toEqual([]);
  });

  it("is not asked for a key the tenant holds: a retry gets the stored answer, also after a wrong first-send header", async () => {
    const key = uniqueKey("held");
    const first = await send(path, key);
    expect(first.status).toBe(201);
    expect(askedAbout(key)).toBe(1);
    refusing.add(key);
    for (const extra of [{}, { [IDEMPOTENCY_ATTEMPT_HEADER]: "1" }] as Record<string, string>[]) {
      const retry = await send(path, key, extra);
      expect(retry).toMatchObject({ status: 201, body: first.body, replayed: true });
    }
    // The wrong first send was asked (it said it holds nothing), refused, and then looked: the key answered.
    expect(askedAbout(key)).toBe(2);
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
  });

  // An atomic first attempt writes its row only when it commits: until then its key is held by nobody, and a
  // duplicate is a new key to the hook as to the table (it would run, then lose at the primary key).
  it.skipIf(path === "/c/atomic")(
    "is not asked while another request holds the key: the duplicate gets 409, as without the hook",
    async () => {
      const key = uniqueKey("in-progress");
      const parked = park(key);
      const first = send(path, key);
      await parked.entered;
      refusing.add(key);
      const duplicate = await send(path, key);
      expect(duplicate.status).toBe(409);
      expect(JSON.parse(duplicate.body)).toMatchObject({ type: "/problems/idempotency-key-in-progress" });
      parked.release();
      expect((await first).status).toBe(201);
      expect(askedAbout(key)).toBe(1);
      expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    },
  );

  it("is not asked for a takeover of a stale key, and is asked for an expired one it replaces", async () => {
    const { sql } = database();
    const stale = uniqueKey("stale");
    expect((await send(path, stale)).status).toBe(201);
    await sql`update idempotency_keys set state = 'in_progress', locked_until = now() - interval '1 second', response_status = null, response_body = null
      where tenant_id = ${tenant.id} and key = ${stale}`;
    refusing.add(stale);
    const takenOver = await send(path, stale);
    expect(takenOver).toMatchObject({ status: 201, replayed: false });
    expect(askedAbout(stale)).toBe(1);

    const expired = uniqueKey("expired");
    expect((await send(path, expired)).status).toBe(201);
    await sql`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = ${tenant.id} and key = ${expired}`;
    refusing.add(expired);
    expect((await send(path, expired)).status).toBe(429);
    expect(askedAbout(expired)).toBe(2);
    // Refused before anything was written: the expired row is as it was.
    expect(await effectsFor(tenant.id, expired)).toHaveLength(1);
    const [row] = await sql<
      { expired: boolean }[]
    >`select expires_at <= now() as expired from idempotency_keys where tenant_id = ${tenant.id} and key = ${expired}`;
    expect(row!.expired).toBe(true);
  });
});
