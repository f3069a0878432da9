/**
 * The client link against a real tRPC HTTP round trip: an in-process fetch
 * handler that fails the way networks and servers do, so the link's retries,
 * their key and their limits are observed on the wire.
 */
import { initTRPC, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createIntentStore } from "./intent.js";
import { idempotencyHeaders, idempotencyLink, type Attempt } from "./link.js";

type Script = ("network" | 409 | 500 | 422 | "ok")[];

function harness(script: Script) {
  const seen: (string | null)[] = [];
  const attemptHeaders: (string | null)[] = [];
  const t = initTRPC.create();
  const router = t.router({
    pay: t.procedure.input(z.object({ amount: z.number() })).mutation(({ input }) => ({ paid: input.amount })),
  });
  let call = 0;
  const fetchImpl = async (url: string | URL | Request, init?: RequestInit) => {
    const req = new Request(url, init);
    seen.push(req.headers.get("idempotency-key"));
    attemptHeaders.push(req.headers.get("idempotency-attempt"));
    const step = script[Math.min(call++, script.length - 1)];
    if (step === "network") throw new TypeError("fetch failed");
    if (step === 409) {
      // What a proxy or the idempotency middleware answers while the first attempt runs.
      return new Response(JSON.stringify({ error: { message: "busy", code: -32009, data: { httpStatus: 409 } } }), {
        status: 409,
        headers: { "retry-after": "0" },
      });
    }
    return fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router:
        step === "ok"
          ? router
          : t.router({
              pay: t.procedure.mutation(() => {
                throw new TRPCError({ code: step === 500 ? "INTERNAL_SERVER_ERROR" : "UNPROCESSABLE_CONTENT" });
              }),
            }),
    });
  };
  const attempts: Attempt[] = [];
  const client = createTRPCClient<typeof router>({
    links: [
      idempotencyLink({ baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 4, onAttempt: (a) => attempts.push(a) }),
      httpLink({ url: "http://test/trpc", headers: idempotencyHeaders, fetch: fetchImpl as typeof fetch }),
    ],
  });
  return { client, seen, attempts, attemptHeaders };
}

describe("idempotencyLink", () => {
  it("retries network errors, 409 and 5xx with the same key until it gets an answer", async () => {
    const { client, seen, attempts, attemptHeaders } = harness(["network", 409, 500, "ok"]);
    await expect(client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-1" } })).resolves.toEqual({ paid: 5 });
    expect(seen).toEqual(["key-1", "key-1", "key-1", "key-1"]);
    expect(attemptHeaders).toEqual(["1", "2", "3", "4"]);
    expect(attempts.filter((a) => a.outcome !== "sent").map((a) => a.outcome)).toEqual([
      "network-error",
      "in-progress",
      "server-error",
      "succeeded",
    ]);
  });

  it("never retries a 422 or another 4xx", async () => {
    const { client, seen } = harness([422, "ok"]);
    const error = await client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-2" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(seen).toEqual(["key-2"]);
  });

  it("gives up after the bounded number of attempts", async () => {
    const { client, seen, attempts } = harness(["network"]);
    await expect(client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-3" } })).rejects.toBeInstanceOf(TRPCClientError);
    expect(seen).toHaveLength(4);
    expect(attempts.at(-1)?.outcome).toBe("gave-up");
  });

  it("runs one loop per key: a second call while the first retries joins it and sends nothing of its own", async () => {
    const { client, seen, attempts, attemptHeaders } = harness(["network", 409, "ok"]);
    const first = client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-4" } });
    const second = client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-4" } });
    await expect(Promise.all([first, second])).resolves.toEqual([{ paid: 5 }, { paid: 5 }]);
    expect(seen).toEqual(["key-4", "key-4", "key-4"]);
    expect(attempts.map((a) => a.outcome)).toEqual(["sent", "joined", "network-error", "sent", "in-progress", "sent", "succeeded"]);
    // Settled, the key has no loop: the next call sends again.
    await expect(client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-4" } })).resolves.toEqual({ paid: 5 });
    expect(seen).toHaveLength(4);
    // It goes on counting the key's sends: the server is never told a used key is new.
    expect(attemptHeaders).toEqual(["1", "2", "3", "4"]);
  });

  it("a joined call shares the final refusal too", async () => {
    const { client, seen } = harness([422]);
    const calls = [1, 2].map(() => client.pay.mutate({ amount: 5 }, { context: { idempotencyKey: "key-5" } }).catch((e: unknown) => e));
    const [a, b] = await Promise.all(calls);
    expect(a).toBeInstanceOf(TRPCClientError);
    expect(b).toBe(a);
    expect(seen).toEqual(["key-5"]);
  });

  it("leaves mutations without a key alone: no header, no retry", async () => {
    const { client, seen, attemptHeaders } = harness(["network", "ok"]);
    await expect(client.pay.mutate({ amount: 5 })).rejects.toBeInstanceOf(TRPCClientError);
    expect(seen).toEqual([null]);
    expect(attemptHeaders).toEqual([null]);
  });
});

describe("intent store", () => {
  const memory = () => {
    const m = new Map<string, string>();
    return {
      getItem: (k: string) => m.get(k) ?? null,
      setItem: (k: string, v: string) => void m.set(k, v),
      removeItem: (k: string) => void m.delete(k),
    };
  };

  it("keeps one key per unchanged intent, mints a new one for a changed intent, forgets a settled one", () => {
    const shared = memory();
    const store = createIntentStore<{ items: string[] }>({ name: "t", shared, perTab: memory() });
    const first = store.keyFor({ items: ["a"] });
    expect(store.keyFor({ items: ["a"] })).toBe(first);
    // Another tab over the same shared storage sees the same key.
    expect(createIntentStore<{ items: string[] }>({ name: "t", shared, perTab: memory() }).keyFor({ items: ["a"] })).toBe(first);
    const changed = store.keyFor({ items: ["a", "b"] });
    expect(changed).not.toBe(first);
    store.settle();
    // The same cart again, after it was paid, is a new purchase: a new key.
    expect(store.keyFor({ items: ["a", "b"] })).not.toBe(changed);
  });

  it("remembers the payment in flight for a reload, until an answer lands", () => {
    const perTab = memory();
    const store = createIntentStore<{ n: number }>({ name: "t", shared: memory(), perTab });
    store.begin("k", { n: 1 });
    const reloaded = createIntentStore<{ n: number }>({ name: "t", shared: memory(), perTab });
    expect(reloaded.inFlight()).toMatchObject({ key: "k", input: { n: 1 } });
    reloaded.land();
    expect(store.inFlight()).toBeUndefined();
  });
});
