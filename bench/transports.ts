/**
 * The bench procedures behind one interface, reached either in-process
 * (`createCaller` on a fresh context per call, as a server component or a
 * test would) or over HTTP through the REST surface. Every call checks its
 * answer, so a benchmark of failing calls cannot pass for a fast one.
 */
import { app } from "../server/app";
import { createCallerFactory } from "../server/trpc";
import { client, serve, type Reply } from "./http";
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
  const keyed = (key: string) => call(new Headers({ "Idempotency-Key": key }));
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
    floor: async (key, input) => void (await (await keyed(key)).caller.floor(input)),
    recoverable: async (key, input) => {
      const { ctx, caller } = await call(new Headers({ "Idempotency-Key": key, "Idempotency-Attempt": "1" }));
      await caller.recoverable(input);
      if (ctx.outcomes.at(-1)?.decision === "replayed") throw new Error("a fresh key was answered as a replay");
    },
    recoverableFloor: async (key, input) => void (await (await keyed(key)).caller.recoverableFloor(input)),
    read: async (id) => void (await (await call()).caller.read({ id })),
    close: async () => undefined,
  };
}

export async function overHttp(tenant: Tenant, maxSockets: number): Promise<Transport> {
  const listening = await serve(app.restHandlerFor(benchRouter));
  const http = client(listening.origin, maxSockets);
  const auth = { authorization: `Bearer ${tenant.token}` };
  const json = { ...auth, "content-type": "application/json" };
  /** A request to the bench route `path`, which must answer `wanted`. */
  const send = async (method: "GET" | "POST", path: string, wanted: number, headers: Record<string, string>, body?: string) => {
    const r = await http.send(method, `/api${path}`, headers, body);
    if (r.status !== wanted) throw new Error(`${method} ${path} answered ${r.status} (wanted ${wanted}): ${r.body}`);
    return r;
  };
  const post = (path: string, input: PaymentInput, headers: Record<string, string> = {}) =>
    send("POST", path, 201, { ...json, ...headers }, JSON.stringify(input));
  const replayed = (r: Reply) => r.headers["idempotent-replayed"] === "true";
  return {
    name: "http",
    plain: async (input) => (await post("/bench/plain", input)).body,
    wrapped: async (key, input, attempt) => {
      const r = await post("/bench/wrapped", input, { "idempotency-key": key, "idempotency-attempt": String(attempt) });
      return { body: r.body, replayed: replayed(r) };
    },
    floor: async (key, input) => void (await post("/bench/floor", input, { "idempotency-key": key })),
    recoverable: async (key, input) => {
      const r = await post("/bench/recoverable", input, { "idempotency-key": key, "idempotency-attempt": "1" });
      if (replayed(r)) throw new Error("a fresh key was answered as a replay");
    },
    recoverableFloor: async (key, input) => void (await post("/bench/recoverable-floor", input, { "idempotency-key": key })),
    read: async (id) => void (await send("GET", `/bench/read?id=${encodeURIComponent(id)}`, 200, auth)),
    close: async () => {
      http.close();
      await listening.close();
    },
  };
}
