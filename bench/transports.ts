/**
 * The bench procedures behind one interface, reached either in-process
 * (`createCaller` on a fresh context per call, as a server component or a
 * test would) or over HTTP through the REST surface. Every call checks its
 * answer, so a benchmark of failing calls cannot pass for a fast one.
 */
import { app } from "../server/app";
import { createCallerFactory } from "../server/trpc";
import { client, serve } from "./http";
import { benchRouter, type PaymentInput } from "./router";

export type Tenant = { id: string; name: string; token: string };

/** What a wrapped call answered: the body as sent and whether it was a replay. */
export type Answer = { body: string; replayed: boolean };

export type Transport = {
  name: string;
  /** The plain write; in-process it returns what the procedure returned (a peer stores it as its answer). */
  plain: (input: PaymentInput) => Promise<unknown>;
  /** `attempt`: the client's count of its sends of the key (Idempotency-Attempt), 1 for a fresh key. */
  wrapped: (key: string, input: PaymentInput, attempt: number) => Promise<Answer>;
  floor: (key: string, input: PaymentInput) => Promise<void>;
  recoverable: (key: string, input: PaymentInput) => Promise<void>;
  recoverableFloor: (key: string, input: PaymentInput) => Promise<void>;
  read: (id: string) => Promise<void>;
  close: () => Promise<void>;
};

const createCaller = createCallerFactory(benchRouter);

export function inProcess(tenant: Tenant): Transport {
  const call = async (headers?: Headers) => {
    const ctx = await app.createContextInner({ tenant, headers });
    return { ctx, caller: createCaller(ctx) };
  };
  return {
    name: "in-process",
    plain: async (input) => (await call()).caller.plain(input),
    wrapped: async (key, input, attempt) => {
      const { ctx, caller } = await call(new Headers({ "Idempotency-Key": key, "Idempotency-Attempt": String(attempt) }));
      const output = await caller.wrapped(input);
      // Serialised only where a scenario reads it (the burst, the stored keys): the floor's client serialises nothing.
      return {
        get body() {
          return JSON.stringify(output);
        },
        replayed: ctx.outcomes.at(-1)?.decision === "replayed",
      };
    },
    floor: async (key, input) => {
      await (await call(new Headers({ "Idempotency-Key": key }))).caller.floor(input);
    },
    recoverable: async (key, input) => {
      const { ctx, caller } = await call(new Headers({ "Idempotency-Key": key, "Idempotency-Attempt": "1" }));
      await caller.recoverable(input);
      if (ctx.outcomes.at(-1)?.decision === "replayed") throw new Error("a fresh key was answered as a replay");
    },
    recoverableFloor: async (key, input) => {
      await (await call(new Headers({ "Idempotency-Key": key }))).caller.recoverableFloor(input);
    },
    read: async (id) => {
      await (await call()).caller.read({ id });
    },
    close: async () => undefined,
  };
}

function expect(status: number, wanted: number, what: string, body: string) {
  if (status !== wanted) throw new Error(`${what} answered ${status} (wanted ${wanted}): ${body}`);
}

export async function overHttp(tenant: Tenant, maxSockets: number): Promise<Transport> {
  const listening = await serve(app.restHandlerFor(benchRouter));
  const http = client(listening.origin, maxSockets);
  const auth = { authorization: `Bearer ${tenant.token}` };
  const json = { ...auth, "content-type": "application/json" };
  return {
    name: "http",
    plain: async (input) => {
      const r = await http.send("POST", "/api/bench/plain", json, JSON.stringify(input));
      expect(r.status, 201, "POST /bench/plain", r.body);
      return r.body;
    },
    wrapped: async (key, input, attempt) => {
      const headers = { ...json, "idempotency-key": key, "idempotency-attempt": String(attempt) };
      const r = await http.send("POST", "/api/bench/wrapped", headers, JSON.stringify(input));
      expect(r.status, 201, "POST /bench/wrapped", r.body);
      return { body: r.body, replayed: r.headers["idempotent-replayed"] === "true" };
    },
    floor: async (key, input) => {
      const r = await http.send("POST", "/api/bench/floor", { ...json, "idempotency-key": key }, JSON.stringify(input));
      expect(r.status, 201, "POST /bench/floor", r.body);
    },
    recoverable: async (key, input) => {
      const headers = { ...json, "idempotency-key": key, "idempotency-attempt": "1" };
      const r = await http.send("POST", "/api/bench/recoverable", headers, JSON.stringify(input));
      expect(r.status, 201, "POST /bench/recoverable", r.body);
      if (r.headers["idempotent-replayed"] === "true") throw new Error("a fresh key was answered as a replay");
    },
    recoverableFloor: async (key, input) => {
      const r = await http.send("POST", "/api/bench/recoverable-floor", { ...json, "idempotency-key": key }, JSON.stringify(input));
      expect(r.status, 201, "POST /bench/recoverable-floor", r.body);
    },
    read: async (id) => {
      const r = await http.send("GET", `/api/bench/read?id=${encodeURIComponent(id)}`, auth);
      expect(r.status, 200, "GET /bench/read", r.body);
    },
    close: async () => {
      http.close();
      await listening.close();
    },
  };
}
