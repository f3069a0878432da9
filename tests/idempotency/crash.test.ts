/**
 * Holders that crash or stall. A killed process (SIGKILL) leaves either
 * nothing (atomic: the transaction dies with its connection) or a committed
 * recovery point that a retry resumes after the lease. A stalled holder that
 * wakes up after being taken over can neither write a phase nor complete.
 */
import { once } from "node:events";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import {
  caller,
  downstreamCalls,
  eagerEvents,
  effectsFor,
  ensureEffectsTable,
  holderThatHangs,
  hooks,
  keyRow,
  newTenant,
  park,
  post,
  uniqueKey,
  type TestTenant,
} from "./fixture";

let tenant: TestTenant;
beforeAll(async () => {
  await ensureEffectsTable();
  tenant = await newTenant("crashes");
});

describe("a holder killed with SIGKILL", () => {
  it("atomic: business writes and the key vanish together; the retry runs once", async () => {
    const key = uniqueKey("killed-atomic");
    const child = await holderThatHangs(tenant, "atomic", key, "after-write", 30_000);
    // The business row exists inside the holder's open transaction only.
    expect(await effectsFor(tenant.id, key)).toHaveLength(0);
    child.kill("SIGKILL");
    await once(child, "exit");
    const res = await post(tenant, "/t/atomic", { tag: key, amount: 13 }, key);
    expect(res.status).toBe(201);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    expect(await effectsFor(tenant.id, key)).toHaveLength(1);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1" });
  });

  it("recoverable: after the lease a retry takes over, resumes after the committed phase and finishes once", async () => {
    const key = uniqueKey("killed-recoverable");
    const child = await holderThatHangs(tenant, "recoverable", key, "between", 1_000);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", recovery_point: "recorded", lease_expired: false });
    child.kill("SIGKILL");
    await once(child, "exit");
    // Within the lease the key is still held: a caller that does not wait is told to retry.
    const early = await post(tenant, "/t/recoverable-no-wait", { tag: key, amount: 13 }, key);
    expect([409, 422]).toContain(early.status);
    const res = await post(tenant, "/t/recoverable", { tag: key, amount: 13 }, key);
    expect(res.status).toBe(201);
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "2" });
  });
});

describe("a stalled holder that wakes up after a takeover", () => {
  it("cannot write its next phase nor complete; it learns it lost (409); the work happened once", async () => {
    const key = uniqueKey("stalled");
    const stall = park(key, "between");
    const stalled = (await caller(tenant, key)).stalling({ tag: key, amount: 5 });
    await stall.entered;
    await new Promise((r) => setTimeout(r, 500)); // the 400 ms lease runs out, nobody renews it
    const retry = await (await caller(tenant, key)).stalling({ tag: key, amount: 5 });
    expect(retry).toMatchObject({ tag: key, amount: 5 });
    stall.release();
    const late = await stalled.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(late).toBeInstanceOf(TRPCError);
    expect((late as TRPCError).code).toBe("CONFLICT");
    expect((late as TRPCError).cause?.name).toBe("IdempotencyLeaseLostError");
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    const row = await keyRow(tenant.id, key);
    expect(row).toMatchObject({ state: "completed", fence: "2" });
    expect(JSON.parse(row!.response_body!)).toEqual(retry);
    // Both attempts called downstream, with one and the same downstream key: the provider dedupes it.
    const calls = downstreamCalls.filter((c) => c.tag === key);
    expect(calls).toHaveLength(2);
    expect(new Set(calls.map((c) => c.downstreamKey)).size).toBe(1);
    hooks.delete(key);
  });

  it("a holder stalled after its last phase cannot complete the key it lost", async () => {
    const key = uniqueKey("late-complete");
    const stall = park(key, "before-complete");
    const stalled = (await caller(tenant, key)).stalling({ tag: key, amount: 6 });
    await stall.entered;
    await new Promise((r) => setTimeout(r, 500));
    const retry = await (await caller(tenant, key)).stalling({ tag: key, amount: 6 });
    stall.release();
    const late = await stalled.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((late as TRPCError).code).toBe("CONFLICT");
    const row = await keyRow(tenant.id, key);
    expect(JSON.parse(row!.response_body!)).toEqual(retry);
    // Both phases were committed by the first holder; the one that took over only completed.
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    hooks.delete(key);
  });

  it("an error after a committed phase keeps the recovery point: the retry resumes without redoing it", async () => {
    const key = uniqueKey("resume");
    let attempts = 0;
    hooks.set(key, () => {
      attempts += 1;
      if (attempts === 1) throw new Error("the provider connection dropped");
    });
    const first = await post(tenant, "/t/recoverable", { tag: key, amount: 8 }, key);
    expect(first.status).toBe(500);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", recovery_point: "recorded", lease_expired: true });
    const retry = await post(tenant, "/t/recoverable", { tag: key, amount: 8 }, key);
    expect(retry.status).toBe(201);
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    hooks.delete(key);
  });
});

describe("a holder still working", () => {
  it("renews its lease, so nobody takes over while it runs for several leases", async () => {
    const key = uniqueKey("renews");
    const hold = park(key);
    const running = post(tenant, "/t/renewing", { tag: key, amount: 2 }, key);
    await hold.entered;
    // Three leases of 300 ms pass; without renewal a duplicate would take over.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 300));
      const dup = await post(tenant, "/t/renewing", { tag: key, amount: 2 }, key);
      expect(dup.status).toBe(409);
      expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", fence: "1", lease_expired: false });
    }
    hold.release();
    expect((await running).status).toBe(201);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "1" });
    expect(await effectsFor(tenant.id, key)).toHaveLength(2);
    hooks.delete(key);
  });

  it("gives the key up when its handler hangs past maxHoldMs: its request answers 409 at once, a retry takes over, the hung holder is fenced out", async () => {
    const key = uniqueKey("hangs");
    const hold = park(key, "between");
    const running = post(tenant, "/t/hanging", { tag: key, amount: 3 }, key);
    let answered: number | undefined;
    void running.then((res) => (answered = res.status));
    await hold.entered;
    // Within its budget the holder's renewals keep the key: a retry is refused.
    expect((await post(tenant, "/t/hanging", { tag: key, amount: 3 }, key)).status).toBe(409);
    expect(answered).toBeUndefined();
    // The budget (900 ms) and the last lease (300 ms) run out; the handler still hangs, but its request is answered.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(answered).toBe(409);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "in_progress", fence: "1", lease_expired: true });
    const retry = await post(tenant, "/t/hanging", { tag: key, amount: 3 }, key);
    expect(retry.status).toBe(201);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "2" });
    // The hung holder wakes up, after its request was answered: it goes on to its next phase, which finds a newer
    // fence, and it writes nothing more.
    hold.release();
    await expect.poll(() => downstreamCalls.filter((c) => c.tag === key).length).toBe(2);
    await new Promise((r) => setTimeout(r, 500));
    expect((await effectsFor(tenant.id, key)).map((e) => e.note)).toEqual([`${key}:recorded`, `${key}:settled`]);
    expect(await keyRow(tenant.id, key)).toMatchObject({ state: "completed", fence: "2" });
    hooks.delete(key);
  });

  it("completes without reporting a lost lease when renewals are still in flight at completion", async () => {
    const keys = Array.from({ length: 30 }, () => uniqueKey("eager"));
    for (const key of keys) expect((await post(tenant, "/t/eager", { tag: key, amount: 1 }, key)).status).toBe(201);
    const mine = new Set(keys);
    expect(eagerEvents.filter((e) => mine.has(e.key) && e.type === "lease_lost")).toEqual([]);
    expect(eagerEvents.filter((e) => mine.has(e.key) && e.type === "completed")).toHaveLength(keys.length);
  });
});
