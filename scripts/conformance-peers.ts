/**
 * npm run conformance:peers — the published conformance matrix,
 * docs/CONFORMANCE.md: one small payment endpoint wrapped by each published
 * Node idempotency library this registry has (with Redis, as its docs
 * show), checked by exactly-once-check under every profile, beside this
 * app's own runs (the JSON reports `npm run test:conformance` left in
 * .data/conformance/). A library failing a check is a finding, not an
 * error: the script fails only when something breaks. Without Redis
 * (127.0.0.1:6379, or REDIS_URL) it says so in one line and exits 0.
 * Ports 3251–3254, loopback only.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { Idempotency, IdempotencyError, IdempotencyErrorCodes } from "@node-idempotency/core";
import { RedisStorageAdapter } from "@node-idempotency/storage-adapter-redis";
import { createClient } from "@redis/client";
import express from "express";
import { getSharedIdempotencyService, idempotency } from "express-idempotency";
import redisAdapterModule from "express-idempotency-redis-adapter";
import { projectRoot, stateDir } from "../db/cluster-home";
import { checkOptions, PROFILE_NAMES, runChecks, type ProfileName, type Report } from "../packages/exactly-once-check/src/index";

// A CommonJS module with `exports.default` (its README: `require(...).default`): from ESM the class is one level down.
const RedisAdapter = (redisAdapterModule as unknown as { default: typeof redisAdapterModule }).default;
type RedisAdapter = InstanceType<typeof RedisAdapter>;

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const TTL_S = 3;
const WORK_MS = 100;
const DATA = '{"amount":1000,"currency":"EUR"}';
const OUT = path.join(projectRoot, "docs", "CONFORMANCE.md");
const APP_REPORTS = path.join(stateDir, "conformance");

const say = (line: string) => process.stdout.write(`conformance:peers: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Answer = { status: number; body: unknown; headers?: Record<string, string> };
/** What a library wraps: the payment of one credential. */
type Pay = (credential: string, input: Record<string, unknown>) => Promise<Answer>;
/** A library around `pay`: the whole POST, given its key header and parsed body. */
type Wrapped = (credential: string, key: string | undefined, body: Record<string, unknown>, raw: string) => Promise<Answer>;
type Peer =
  | { name: string; how: string; port: number; wrap: (pay: Pay) => Wrapped }
  | { name: string; how: string; port: number; express: (pay: Pay) => express.RequestHandler[] };

/** The payment every library wraps (it takes WORK_MS), kept per credential, and its count. */
function book() {
  const payments = new Map<string, unknown[]>();
  const pay: Pay = async (credential, input) => {
    await sleep(WORK_MS);
    const payment = { id: `pay_${randomUUID()}`, amount: input.amount, currency: input.currency, createdAt: new Date().toISOString() };
    payments.set(credential, [...(payments.get(credential) ?? []), payment]);
    return { status: 201, body: payment };
  };
  return { pay, count: (credential: string) => payments.get(credential)?.length ?? 0 };
}

const credentialOf = (authorization: string | undefined) => /^Bearer (tok_a|tok_b)$/.exec(authorization ?? "")?.[1];
const listen = (server: http.Server, port: number) =>
  new Promise<string>((resolve) =>
    server.listen(port, "127.0.0.1", () => {
      stopping.add(() => new Promise((done) => server.close(() => done())));
      resolve(`http://127.0.0.1:${port}`);
    }),
  );

/** The same endpoint as an Express app, the library as its middleware. */
function serveExpress(peer: Extract<Peer, { express: unknown }>): Promise<string> {
  const { pay, count } = book();
  const app = express();
  app.use(express.json());
  app.use((req, res, next) => (credentialOf(req.headers.authorization) ? next() : void res.status(401).json({ message: "Unauthorized" })));
  app.get("/payments/count", (req, res) => void res.json({ count: count(credentialOf(req.headers.authorization)!) }));
  app.post("/payments", ...peer.express(pay));
  // The library passes its refusals to `next(error)`: answered as Express answers an error without a status (500), not logged.
  app.use(
    ((error: Error, _req, res, _next) => void res.status(500).json({ message: error.message })) satisfies express.ErrorRequestHandler,
  );
  return listen(http.createServer(app), peer.port);
}

function serveHttp(peer: Extract<Peer, { wrap: unknown }>): Promise<string> {
  const { pay, count } = book();
  const handle = peer.wrap(pay);
  const server = http.createServer((req, res) => {
    const send = (a: Answer) => res.writeHead(a.status, { "content-type": "application/json", ...a.headers }).end(JSON.stringify(a.body));
    const credential = credentialOf(req.headers.authorization);
    if (!credential) return void send({ status: 401, body: { message: "Unauthorized" } });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "GET" && req.url === "/payments/count") return void send({ status: 200, body: { count: count(credential) } });
      if (req.method !== "POST" || req.url !== "/payments") return void send({ status: 404, body: { message: "Not found" } });
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return void send({ status: 400, body: { message: "Invalid JSON" } });
      }
      if (typeof body.amount !== "number" || typeof body.currency !== "string")
        return void send({ status: 400, body: { message: "amount and currency are required" } });
      const key = req.headers["idempotency-key"];
      handle(credential, typeof key === "string" ? key : undefined, body, raw).then(send, (error: unknown) =>
        send({ status: 500, body: { message: String(error) } }),
      );
    });
  });
  return listen(server, peer.port);
}

/** A connected Redis client, as the cache persistence layer takes it. */
type CacheClient = ConstructorParameters<typeof CachePersistenceLayer>[0]["client"];

function peers(redis: CacheClient, adapter: RedisStorageAdapter, expressAdapter: RedisAdapter, run: string): Peer[] {
  const nodeIdempotency = new Idempotency(adapter, { cacheKeyPrefix: `eo-peers-${run}`, cacheTTLMS: TTL_S * 1000 });
  // The status codes @node-idempotency/nestjs and /express answer for the core's errors (their shared idempotency2HttpCodeMap).
  const nodeStatus: Record<IdempotencyErrorCodes, number> = {
    [IdempotencyErrorCodes.IDEMPOTENCY_KEY_LEN_EXEEDED]: 400,
    [IdempotencyErrorCodes.IDEMPOTENCY_KEY_MISSING]: 400,
    [IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH]: 422,
    [IdempotencyErrorCodes.REQUEST_IN_PROGRESS]: 409,
  };
  const powertools = (withContext: boolean) => (pay: Pay) => {
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'headers."idempotency-key"',
      payloadValidationJmesPath: "powertools_json(body)",
      expiresAfterSeconds: TTL_S,
    });
    // A Lambda's context tells how long an in-progress record may be trusted (the function's remaining time).
    if (withContext)
      config.registerLambdaContext({ getRemainingTimeInMillis: () => 10_000 } as Parameters<IdempotencyConfig["registerLambdaContext"]>[0]);
    const handler = makeIdempotent(
      async (event: { headers: Record<string, string | undefined>; body: string; credential: string }) =>
        pay(event.credential, JSON.parse(event.body) as Record<string, unknown>),
      {
        persistenceStore: new CachePersistenceLayer({ client: redis }),
        config,
      },
    );
    return (async (credential, key, _body, raw) => {
      try {
        return await handler({ headers: { "idempotency-key": key }, body: raw, credential });
      } catch (error) {
        // API Gateway's answer for a function that threw; the docs leave mapping the library's errors to the app.
        if (error instanceof IdempotencyAlreadyInProgressError) return { status: 409, body: { message: error.message } };
        if (error instanceof IdempotencyValidationError) return { status: 422, body: { message: error.message } };
        throw error;
      }
    }) satisfies Wrapped;
  };
  return [
    {
      name: "@node-idempotency/core + Redis",
      how: "`Idempotency` with `RedisStorageAdapter` around the handler, `onRequest` before it and `onResponse` after it (the status kept beside the body), answered as its Nest and Express plugins answer: 400 for a missing or long key, 422 for another fingerprint, 409 with `Retry-After: 1` in progress, a replay with its stored status and `Idempotent-Replayed: true` (@node-idempotency/nestjs itself needs NestJS, a framework of its own)",
      port: 3251,
      wrap: (pay) => async (credential, key, body) => {
        const req = { headers: key === undefined ? {} : { "idempotency-key": key }, body, path: "/payments", method: "POST" };
        try {
          const stored = await nodeIdempotency.onRequest<Answer["body"], unknown>(req);
          if (stored)
            return { status: Number(stored.additional?.statusCode ?? 200), body: stored.body, headers: { "idempotent-replayed": "true" } };
        } catch (error) {
          if (!(error instanceof IdempotencyError)) throw error;
          const inProgress = error.code === IdempotencyErrorCodes.REQUEST_IN_PROGRESS;
          return {
            status: nodeStatus[error.code],
            body: { message: error.message },
            ...(inProgress ? { headers: { "retry-after": "1" } } : {}),
          };
        }
        const answer = await pay(credential, body);
        await nodeIdempotency.onResponse(req, { body: answer.body, additional: { statusCode: answer.status } });
        return answer;
      },
    },
    {
      name: "@aws-lambda-powertools/idempotency + Redis, with its Lambda context",
      how: '`makeIdempotent` with `CachePersistenceLayer` (Redis), `eventKeyJmesPath` the `Idempotency-Key` header, `payloadValidationJmesPath` the parsed body, `registerLambdaContext` as its docs ask; in-progress 409, validation 422. With the cache layer, payload validation refuses even a byte-identical retry (422; the same with `payloadValidationJmesPath: "body"`, and with the library called directly, two calls with one event)',
      port: 3252,
      wrap: powertools(true),
    },
    {
      name: "@aws-lambda-powertools/idempotency + Redis, without its Lambda context",
      how: "the same, without `registerLambdaContext` (outside Lambda there is none)",
      port: 3253,
      wrap: powertools(false),
    },
    {
      name: "express-idempotency + Redis",
      how: "`idempotency({ dataAdapter })` with `express-idempotency-redis-adapter` (TTL 3 s) on the route, the handler returning early on `isHit(req)` as its README shows; its own answers for a key in progress and a misused key",
      port: 3254,
      express: (pay) => [
        idempotency({ dataAdapter: expressAdapter }),
        (req, res, next) => {
          if (getSharedIdempotencyService().isHit(req)) return;
          const body = req.body as Record<string, unknown>;
          if (typeof body.amount !== "number" || typeof body.currency !== "string")
            return void res.status(400).json({ message: "amount and currency are required" });
          pay(credentialOf(req.headers.authorization)!, body).then((a) => void res.status(a.status).json(a.body), next);
        },
      ],
    },
  ];
}

type Row = { name: string; how: string; reports: Partial<Record<ProfileName, Report>> };

const cell = (r: Report | undefined) => {
  if (!r) return "not run";
  const n = (f: (c: Report["checks"][number]) => boolean) => r.checks.filter(f).length;
  const failed = n((c) => c.verdict === "fail");
  return `${n((c) => c.verdict === "pass")} ✓${failed ? ` · ${n((c) => c.failure === "unsafe")} unsafe · ${n((c) => c.failure === "deviation")} deviation` : ""}${n((c) => c.verdict === "skip") ? ` · ${n((c) => c.verdict === "skip")} skipped` : ""}`;
};

function render(rows: Row[], command: string, at: string): string {
  const lines = [
    "# Conformance: published idempotency libraries and this app",
    "",
    `Generated by \`${command}\` on ${at} (exactly-once-check, every profile; Redis 7, Node 20). Do not edit by hand.`,
    "Each library wraps the same endpoint: a payment that takes 100 ms, kept per credential (two bearer tokens), with a",
    `per-credential count for \`--count-url\`; keys retained ${TTL_S} s. A cell counts the eight checks: passed, failed (unsafe /`,
    "deviation from the profile's form), skipped. Unsafe: a second execution, another credential's answer or effect, a",
    "stored answer lost or altered, an expired key that never runs again. This app's row comes from",
    "`npm run test:conformance` (REST, a fresh database).",
    "",
    `| | ${PROFILE_NAMES.map((p) => `\`${p}\``).join(" | ")} |`,
    `| --- | ${PROFILE_NAMES.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.name} | ${PROFILE_NAMES.map((p) => cell(r.reports[p])).join(" | ")} |`),
    "",
    "## Unsafe findings (`core`, the common ground)",
    "",
  ];
  for (const r of rows) {
    const unsafe = (r.reports.core?.checks ?? []).filter((c) => c.failure === "unsafe");
    if (unsafe.length === 0) continue;
    lines.push(`### ${r.name}`, "");
    for (const c of unsafe) {
      lines.push(
        `- **${c.name}**: ${c.findings
          .filter((f) => f.kind === "unsafe")
          .map((f) => f.text)
          .join("; ")}`,
      );
      const evidence = [
        ...c.details,
        ...c.exchanges
          .filter((x) => x.label.startsWith("count") || x.answer === undefined || x.answer.status >= 200)
          .map((x) => `${x.label}: ${x.answer ? `${x.answer.status} ${x.answer.body.slice(0, 100)}` : x.error}`),
      ];
      for (const e of evidence.slice(0, 6)) lines.push(`  - \`${e.replace(/`/g, "'").slice(0, 160)}\``);
    }
    lines.push("");
  }
  lines.push("## How each is wrapped", "", ...rows.map((r) => `- **${r.name}**: ${r.how}.`), "");
  return lines.join("\n");
}

const stopping = new Set<() => Promise<void>>();
let stopped: Promise<void> | undefined;
const stopAll = () => (stopped ??= Promise.all([...stopping].map((stop) => stop())).then(() => undefined));
// Ctrl-C reaches this process once, or twice (npm forwards it): the same orderly stop, then exit.
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => void stopAll().then(() => process.exit(130)));

async function main(): Promise<number> {
  const redis = createClient({ url: REDIS_URL, socket: { connectTimeout: 2_000, reconnectStrategy: false } });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
  } catch (error) {
    say(`skipped: Redis at ${REDIS_URL} does not answer (${(error as Error).message})`);
    return 0;
  }
  const adapter = new RedisStorageAdapter({ url: REDIS_URL });
  await adapter.connect();
  const expressAdapter = new RedisAdapter({ connectionConfig: { url: REDIS_URL }, ttl: TTL_S });
  await expressAdapter.connect();
  const rows: Row[] = [];
  try {
    for (const peer of peers(redis, adapter, expressAdapter, randomUUID().slice(0, 8))) {
      const url = await ("express" in peer ? serveExpress(peer) : serveHttp(peer));
      const row: Row = { name: peer.name, how: peer.how, reports: {} };
      for (const profile of PROFILE_NAMES) {
        const report = await runChecks(
          checkOptions({
            url: `${url}/payments`,
            data: DATA,
            headers: [["Authorization", "Bearer tok_a"]],
            otherHeaders: [["Authorization", "Bearer tok_b"]],
            countUrl: `${url}/payments/count`,
            ttlSeconds: TTL_S,
            timeoutMs: 10_000,
            profile,
          }),
        );
        row.reports[profile] = report;
        say(`${peer.name} (${profile}): ${cell(report)}`);
      }
      rows.push(row);
    }
  } finally {
    await stopAll();
    await adapter.disconnect();
    await expressAdapter.disconnect();
    redis.destroy();
  }
  const app: Row = {
    name: "this app (`/api/v1/payments`)",
    how: "this repository's middleware, `npm run test:conformance` over REST",
    reports: {},
  };
  for (const profile of PROFILE_NAMES) {
    const file = path.join(APP_REPORTS, profile === "exactly-once" ? "rest.json" : `rest-${profile}.json`);
    if (existsSync(file)) app.reports[profile] = JSON.parse(readFileSync(file, "utf8")) as Report;
  }
  if (Object.keys(app.reports).length === 0) say("this app's row is empty: run npm run test:conformance first");
  rows.push(app);
  writeFileSync(OUT, render(rows, "npm run conformance:peers", new Date().toISOString().slice(0, 10)));
  say(`wrote ${path.relative(projectRoot, OUT)}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`conformance:peers: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
