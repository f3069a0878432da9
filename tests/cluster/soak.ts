/**
 * npm run test:cluster — the soak: the real topology (HAProxy, three app
 * instances, PgBouncer in transaction mode, one PostgreSQL, the provider
 * stand-in; scripts/cluster/topology.ts) under traffic while instances are
 * SIGKILLed and restarted at random.
 *
 * Clients send payments, checkouts, deposits and withdrawals through HAProxy,
 * each operation with its own Idempotency-Key, and retry with that key on a
 * network error, a timeout, a 409 or a 5xx. Some payment and checkout clients
 * give up when a kill cut their attempt short: the completer of some instance
 * must finish those (one of them, sent straight to an instance that is then
 * killed, is certain to be left to a completer: the run fails if no completer
 * finished it). HAProxy itself re-sends requests (L7 retries, including
 * on a response timeout shorter than the slow provider), so duplicates reach
 * the app from the proxy as well as from the clients.
 *
 * At the end every key is checked: every answered attempt byte-identical and
 * equal to the stored answer, at most one payment, order and ledger
 * transaction per key, one provider charge per successful payment and none
 * without a payment, balances equal to the answered deposits and withdrawals
 * and never negative, reconcile clean, no key left in progress. It prints the
 * violations (if any) and one summary line; the exit code is the verdict.
 * Loopback only; bounded in operations and time.
 *
 * Options: --ops (at least this many operations, 360), --kills (at least, 6),
 * --clients (12), --instances (3).
 *
 * npm run test:failover (`--failover`) runs the same load on the HA database
 * (scripts/cluster/patroni.ts: two PostgreSQL 15 nodes under Patroni with a
 * synchronous standby) and, instead of killing instances, loses the
 * primary's machine (its Patroni and PostgreSQL SIGKILLed together) at least
 * `--failovers` times (2), bringing the lost node back as a standby each
 * time. Before that it kills only the primary's PostgreSQL once: Patroni
 * must restart it on the same node, without a failover. The same checks
 * hold; a client's acknowledged answer missing afterwards is a lost write.
 * It also prints the time from each kill to the first write answered through
 * the front door, and who led when. `--async` turns synchronous replication
 * off and reports what was lost instead of failing.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { scratchClusterParent } from "../../db/cluster-home";
import * as schema from "../../db/schema";
import { CATALOG } from "../../db/seed";
import { readHaproxyLog } from "../../scripts/cluster/haproxy";
import { freeHaPorts, startHaDatabase, type HaDatabase } from "../../scripts/cluster/patroni";
import { startCluster, type Cluster, type Instance } from "../../scripts/cluster/topology";
import { createPspClient } from "../../server/psp/client";
import { reconcile } from "../../server/reconcile/reconcile";
import { createTenant } from "../../server/tenants/service";
import { createFreshDatabase, freePort } from "../support/database";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "360" },
    kills: { type: "string", default: "6" },
    clients: { type: "string", default: "12" },
    instances: { type: "string", default: "3" },
    failover: { type: "boolean", default: false },
    failovers: { type: "string", default: "2" },
    async: { type: "boolean", default: false },
  },
});
const FAILOVER = values.failover;
const MIN_FAILOVERS = Number(values.failovers);
/** Asynchronous replication: what a failover loses is measured and reported, not a failure. */
const ASYNC = values.async;
if (ASYNC && !FAILOVER) throw new Error("--async goes with --failover");
const MIN_OPS = Number(values.ops);
const MIN_KILLS = Number(values.kills);
const CLIENTS = Number(values.clients);
const INSTANCES = Number(values.instances);
/** The whole soak, start-up excluded, must fit in this; past it the run fails. */
const BUDGET_MS = 240_000;
/** HAProxy gives up on an instance's answer after this: shorter than the slow provider, so it re-sends those. */
const SERVER_TIMEOUT_MS = 2500;
const PSP_SLOW_MS = 3000;
const LEASE_MS = 3000;
/** After a kill, a write must be answered through the front door within this (Patroni's ttl is 10 s). */
const WRITES_BACK_WITHIN_MS = 45_000;
const ACCOUNTS = 6;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const between = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
const cents = (min: number, max: number) => (between(min * 100, max * 100) / 100).toFixed(2);

type Kind = "payment" | "checkout" | "deposit" | "withdrawal";
type Attempt = { status?: number; body?: string; error?: string; replayed: boolean };
/** `firstCopies`: how many copies the first attempt went as (2 for a double submit). */
type Op = {
  kind: Kind;
  key: string;
  path: string;
  body: string;
  attempts: Attempt[];
  firstCopies: number;
  answer?: Attempt;
  gaveUp: boolean;
  accountId?: string;
  amount?: string;
};

/** 409 (in progress) and 5xx are not answers: the client retries them with the same key. */
const isAnswer = (status: number) => status !== 409 && status < 500;

const violations: string[] = [];
const violation = (line: string) => violations.push(line);

async function main(): Promise<number> {
  const started = Date.now();
  const runDir = scratchClusterParent(FAILOVER ? "failover" : "soak");
  const ha = FAILOVER
    ? await startHaDatabase({
        ports: await freeHaPorts(),
        runDir: `${runDir}/ha`,
        synchronous: !ASYNC,
        onLog: (line) => process.stdout.write(`ha: ${line}\n`),
      })
    : undefined;
  const fresh = ha ? { url: ha.url, dispose: ha.stop } : await createFreshDatabase("soak");
  const ports = { haproxy: await freePort(), pooler: await freePort(), psp: await freePort(), instances: [] as number[] };
  for (let i = 0; i < INSTANCES; i++) ports.instances.push(await freePort());
  let cluster: Cluster | undefined;
  const primary = postgres(fresh.url, { max: 2, onnotice: () => {} });
  try {
    cluster = await startCluster({
      primaryUrl: fresh.url,
      replicaUrl: ha?.replicaUrl,
      instancePorts: ports.instances,
      port: ports.haproxy,
      poolerPort: ports.pooler,
      pspPort: ports.psp,
      runDir,
      serverTimeoutMs: SERVER_TIMEOUT_MS,
      pspSlowMs: PSP_SLOW_MS,
      pspWebhookSecret: "whsec_soak_only",
      seedDemo: true,
      instanceEnv: {
        ADMIN_PASSWORD: "a soak admin password",
        DEMO_MODE: "false",
        LOG_LEVEL: "warn",
        IDEMPOTENCY_LEASE_MS: String(LEASE_MS),
        COMPLETER_INTERVAL_MS: "500",
      },
    });
    const db = drizzle({ client: primary, schema });
    const { tenant, token } = await createTenant(db, "soak");
    const soak = new Soak(cluster, token, ha);
    const accountIds = await soak.setUp();
    const probe = await soak.probe();
    await soak.abandon(primary, tenant.id);
    await soak.run(accountIds);
    await soak.settle(primary, tenant.id);
    await soak.check(primary, db, tenant.id);
    const haproxy = readHaproxyLog(cluster.haproxyLog);
    const resentPosts = haproxy.filter((r) => r.method === "POST" && r.retries > 0);
    const summary = soak.summary(
      resentPosts.length,
      haproxy.filter((r) => r.retries > 0).length,
      Math.round((Date.now() - started) / 1000),
    );
    // What HAProxy's re-sent POSTs ended as; the slow payments are the ones it re-sent while the first copy still ran (response-timeout).
    const byStatus = new Map<string, number>();
    for (const r of resentPosts) byStatus.set(`${r.status} ${r.termination}`, (byStatus.get(`${r.status} ${r.termination}`) ?? 0) + 1);
    const slow = resentPosts.filter((r) => r.key?.startsWith("soak-payment-slow-")).length;
    const slowAll = haproxy.filter((r) => r.method === "POST" && r.key?.startsWith("soak-payment-slow-")).length;
    process.stdout.write(
      `haproxy: re-sent POSTs by final status and termination: ${[...byStatus].map(([k, n]) => `${k} ×${n}`).join(", ")}; ` +
        `slow payments (provider ${PSP_SLOW_MS} ms > timeout server ${SERVER_TIMEOUT_MS} ms) re-sent: ${slow} of ${slowAll} requests\n`,
    );
    // Under asynchronous replication a violation is what a failover lost: reported, measured, not a failure of the run.
    const word = ASYNC ? "lost" : "violation";
    for (const v of violations.slice(0, 30)) process.stdout.write(`${word}: ${v}\n`);
    if (violations.length > 30) process.stdout.write(`${word}: … and ${violations.length - 30} more\n`);
    process.stdout.write(`${probe}\n${summary} ${ASYNC ? "lost-or-altered" : "violations"}=${violations.length}\n`);
    if (ha) process.stdout.write(`${soak.failoverSummary()}\n`);
    return violations.length === 0 || ASYNC ? 0 : 1;
  } finally {
    await primary.end({ timeout: 5 });
    await cluster?.stop();
    await fresh.dispose();
    if (violations.length === 0 || ASYNC) rmSync(runDir, { recursive: true, force: true });
    else process.stdout.write(`logs kept in ${runDir}\n`);
  }
}

/** One loss of the primary: who led, who leads after, and how long until a write was answered through the front door. */
type Failover = { lost: string; leader?: string; toFirstWriteMs?: number; pgOnly: boolean };

class Soak {
  readonly ops: Op[] = [];
  kills = 0;
  /** Counts up with every kill: an attempt that saw it change was cut short by a kill (or may have been). */
  private killEpoch = 0;
  private restarts: Promise<void>[] = [];
  /** Instances killed and not yet healthy again: never killed twice, nor counted as serving. */
  private readonly down = new Set<Instance>();
  /** Attempts in flight whose client may walk away when an instance is killed. */
  private readonly walkers = new Set<AbortController>();
  private stopChaos = false;
  completedByCompleter = 0;

  readonly failovers: Failover[] = [];

  constructor(
    private readonly cluster: Cluster,
    private readonly token: string,
    private readonly ha?: HaDatabase,
  ) {}

  /** Abandoned for certain (see `abandon`): only a completer can finish it. */
  private abandoned?: Op;

  private async send(op: Op, walkAway?: AbortSignal, base = this.cluster.url): Promise<Attempt> {
    try {
      const res = await fetch(`${base}${op.path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json", "Idempotency-Key": op.key },
        body: op.body,
        signal: walkAway ? AbortSignal.any([walkAway, AbortSignal.timeout(20_000)]) : AbortSignal.timeout(20_000),
      });
      const body = await res.text();
      // A 500 is the app's own failure (HAProxy's are 502-504): an invariant the middleware guards broke somewhere.
      if (res.status === 500) violation(`${op.kind} ${op.key}: 500 from the app: ${body.slice(0, 200)}`);
      return { status: res.status, body, replayed: res.headers.get("idempotent-replayed") === "true" };
    } catch (error) {
      return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), replayed: false };
    }
  }

  /**
   * Attempts with one key until an answer, backing off. Some clients
   * double-submit: their first attempt goes twice at once (two connections,
   * so HAProxy sends them to two instances). `mayGiveUp`: when an instance is
   * killed during an attempt, the client may walk away at once (closing its
   * request) or after a failed attempt, and not come back until the end.
   */
  private async perform(op: Op, mayGiveUp: boolean, sent?: Promise<Attempt>): Promise<void> {
    this.ops.push(op);
    const double = !sent && Math.random() < 0.15;
    if (double) op.firstCopies = 2;
    for (let n = 0; ; n++) {
      const epoch = this.killEpoch;
      const walkAway = new AbortController();
      if (mayGiveUp) this.walkers.add(walkAway);
      const copies = n === 0 && sent ? [sent] : Array.from({ length: n === 0 && double ? 2 : 1 }, () => this.send(op, walkAway.signal));
      const attempts = await Promise.all(copies);
      this.walkers.delete(walkAway);
      op.attempts.push(...attempts);
      if (walkAway.signal.aborted) {
        op.gaveUp = true;
        return;
      }
      const answered = attempts.find((a) => a.status !== undefined && isAnswer(a.status));
      if (answered) {
        op.answer ??= answered;
        return;
      }
      if (mayGiveUp && this.killEpoch !== epoch && Math.random() < 0.5) {
        op.gaveUp = true;
        return;
      }
      const last = attempts.at(-1)!;
      if (n >= 40) {
        violation(`${op.kind} ${op.key}: no answer after ${n + 1} attempts (last: ${last.status ?? last.error})`);
        return;
      }
      await sleep(Math.min(2000, 100 * 2 ** Math.min(n, 5)) * Math.random() + (last.status === 409 ? 500 : 0));
    }
  }

  private op(kind: Kind, path: string, body: unknown, extra: Partial<Op> = {}): Op {
    return {
      kind,
      key: `soak-${kind}-${randomUUID()}`,
      path,
      body: JSON.stringify(body),
      attempts: [],
      firstCopies: 1,
      gaveUp: false,
      ...extra,
    };
  }

  async setUp(): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const open = this.op("deposit", "/api/v1/accounts", { currency: "EUR" });
      await this.perform(open, false);
      // Opening an account is not a money movement: kept out of the deposit sums below.
      this.ops.pop();
      if (open.answer?.status !== 201) throw new Error(`opening an account failed: ${open.answer?.status} ${open.answer?.body}`);
      const id = (JSON.parse(open.answer.body!) as { id: string }).id;
      ids.push(id);
      const deposit = this.op(
        "deposit",
        `/api/v1/accounts/${id}/deposits`,
        { amount: "150.00", currency: "EUR" },
        { accountId: id, amount: "150.00" },
      );
      await this.perform(deposit, false);
    }
    return ids;
  }

  /**
   * Measured, not assumed: does HAProxy re-send a POST that already reached
   * an instance? Every instance but the first is put in maintenance, a slow
   * payment goes to the first (the provider holds it 3 s), the others come
   * back, and the first is SIGKILLed while it waits on the provider. HAProxy's
   * log says whether it sent the POST again and where; the key's checks below
   * say whether the app kept it to one charge.
   */
  async probe(): Promise<string> {
    const [holder, ...others] = this.cluster.instances;
    if (!holder || others.length === 0) throw new Error("the probe needs two instances");
    for (const o of others) await this.cluster.haproxyCommand(`set server instances/${o.name} state maint`);
    const op = this.op("payment", "/api/v1/payments", { amount: "42.00", currency: "EUR", destination: "acct_test_slow" });
    op.key = `soak-probe-${randomUUID()}`;
    const sent = this.send(op);
    // The instance has claimed the key and waits on the provider for PSP_SLOW_MS.
    await sleep(1000);
    for (const o of others) await this.cluster.haproxyCommand(`set server instances/${o.name} state ready`);
    this.kill(holder);
    await this.perform(op, false, sent);
    const line = readHaproxyLog(this.cluster.haproxyLog).find((r) => r.key === op.key);
    if (!line || line.retries === 0)
      violation(
        `probe: HAProxy did not re-send the POST whose instance was killed mid-request (${line ? `${line.status} ${line.termination}` : "not logged"})`,
      );
    const first = op.attempts[0]!;
    return (
      `probe: POST SIGKILLed mid-request on ${holder.name} -> HAProxy retries=${line?.retries ?? "?"} final server=${line?.server ?? "?"} ` +
      `status=${line?.status ?? "?"} termination=${line?.termination ?? "?"}; the client's attempt got ${first.status ?? first.error}` +
      `${first.replayed ? " (replayed)" : ""}, then ${op.answer?.status ?? "no answer"} after ${op.attempts.length} attempt(s)`
    );
  }

  /**
   * A client that walks away after a crash, for certain (the random walk-aways
   * below may all be finished by HAProxy's re-send or a retry first): a slow
   * payment sent straight to one instance, so no proxy re-sends it; once its
   * key is claimed, that instance is SIGKILLed while it waits on the provider,
   * and the client does not come back until the end. Only a completer can
   * finish the key; `settle` checks that one did.
   */
  async abandon(sql: postgres.Sql, tenantId: string): Promise<void> {
    // The probe's instance may still be restarting.
    const holder = this.cluster.instances.find((i) => !this.down.has(i))!;
    const op = this.op("payment", "/api/v1/payments", { amount: "17.00", currency: "EUR", destination: "acct_test_slow" });
    op.key = `soak-abandoned-${randomUUID()}`;
    this.ops.push(op);
    const walkAway = new AbortController();
    let answered: Attempt | undefined;
    const sent = this.send(op, walkAway.signal, holder.url).then((a) => (answered = a));
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [row] = await sql<{ state: string }[]>`select state from idempotency_keys where tenant_id = ${tenantId} and key = ${op.key}`;
      if (row?.state === "in_progress") break;
      if (answered || Date.now() > deadline) {
        throw new Error(
          `the abandoned payment was not claimed on ${holder.name} (key: ${row?.state ?? "none"}; ${answered ? `answer: ${answered.status ?? answered.error}` : "no answer in 10 s"})`,
        );
      }
      await sleep(20);
    }
    this.kill(holder);
    walkAway.abort();
    op.attempts.push(await sent);
    op.gaveUp = true;
    this.abandoned = op;
  }

  private nextOp(accountIds: string[]): { op: Op; mayGiveUp: boolean } {
    const roll = Math.random();
    if (roll < 0.45) {
      const destination = pick([
        "acct_soak_shop",
        "acct_soak_shop",
        "acct_soak_shop",
        "acct_soak_cafe",
        "acct_test_slow",
        "acct_test_error",
        "acct_test_decline",
      ]);
      const op = this.op("payment", "/api/v1/payments", { amount: cents(1, 99), currency: "EUR", destination });
      // Named so HAProxy's log tells them apart: they outlast its server timeout, so it re-sends them while they run.
      if (destination === "acct_test_slow") op.key = op.key.replace("soak-payment-", "soak-payment-slow-");
      return { op, mayGiveUp: true };
    }
    if (roll < 0.7) {
      const items = [{ sku: pick(CATALOG).sku, quantity: between(1, 3) }];
      return { op: this.op("checkout", "/api/v1/orders", { items }), mayGiveUp: true };
    }
    const accountId = pick(accountIds);
    if (roll < 0.8) {
      const amount = cents(5, 30);
      return {
        op: this.op("deposit", `/api/v1/accounts/${accountId}/deposits`, { amount, currency: "EUR" }, { accountId, amount }),
        mayGiveUp: false,
      };
    }
    // Withdrawals outrun deposits: some meet an empty account (a stored 422), none may overdraw it.
    const amount = cents(5, 40);
    return {
      op: this.op("withdrawal", `/api/v1/accounts/${accountId}/withdrawals`, { amount, currency: "EUR" }, { accountId, amount }),
      mayGiveUp: false,
    };
  }

  async run(accountIds: string[]): Promise<void> {
    const deadline = Date.now() + BUDGET_MS;
    let issued = 0;
    const enough = () =>
      (issued >= MIN_OPS && (this.ha ? this.failovers.filter((f) => !f.pgOnly).length >= MIN_FAILOVERS : this.kills >= MIN_KILLS)) ||
      Date.now() > deadline;
    const client = async () => {
      while (!enough()) {
        issued++;
        const { op, mayGiveUp } = this.nextOp(accountIds);
        await this.perform(op, mayGiveUp);
      }
    };
    const chaos = this.ha
      ? this.loseThePrimary(this.ha, accountIds, enough).catch(
          (error: unknown) => void violation(`failover: ${error instanceof Error ? error.message : String(error)}`),
        )
      : this.killInstances();
    await Promise.all(Array.from({ length: CLIENTS }, client));
    this.stopChaos = true;
    await chaos;
    await Promise.all(this.restarts);
    const goal = this.ha ? `${MIN_FAILOVERS} failovers` : `${MIN_KILLS} kills`;
    if (Date.now() > deadline)
      violation(
        `the soak did not reach ${MIN_OPS} operations and ${goal} within ${BUDGET_MS / 1000} s (${issued} ops, ${this.kills} kills)`,
      );
  }

  /** Instances SIGKILLed at random, every 2–4.5 s, one always left serving. */
  private async killInstances(): Promise<void> {
    while (!this.stopChaos) {
      await sleep(between(2000, 4500));
      if (this.stopChaos) break;
      const alive = this.cluster.instances.filter((i) => !this.down.has(i));
      // One instance always serves, so the run measures recovery, not an outage.
      if (alive.length < 2) continue;
      this.kill(pick(alive));
    }
  }

  /**
   * The database loses its primary: once only its PostgreSQL (Patroni
   * restarts it on the same node), then its whole machine, again and again,
   * each time waiting for a write answered through the front door and for
   * the lost node to be back as a standby.
   */
  private async loseThePrimary(ha: HaDatabase, accountIds: string[], enough: () => boolean): Promise<void> {
    for (let n = 0; !enough(); n++) {
      await sleep(between(2000, 4000));
      const leader = await ha.leader();
      if (!leader) throw new Error("no node leads before a kill");
      const pgOnly = n === 0;
      const failover: Failover = { lost: leader.name, pgOnly };
      this.failovers.push(failover);
      const killedAt = Date.now();
      if (pgOnly) leader.killPostgres();
      else leader.lose();
      this.killEpoch++;
      for (const w of this.walkers) if (Math.random() < 0.3) w.abort();
      const answered = await this.firstWrite(accountIds, WRITES_BACK_WITHIN_MS);
      if (answered === undefined)
        violation(
          `no write was answered through the front door within ${WRITES_BACK_WITHIN_MS / 1000} s of ${pgOnly ? `killing ${leader.name}'s PostgreSQL` : `losing ${leader.name}`}`,
        );
      else failover.toFirstWriteMs = answered - killedAt;
      // Killed alone, PostgreSQL comes back on its node, which leads again with its standby streaming.
      failover.leader = (pgOnly ? await ha.healthy(60_000) : await ha.leader())?.name;
      if (pgOnly) {
        if (failover.leader !== leader.name)
          violation(
            `only ${leader.name}'s PostgreSQL was killed, yet ${failover.leader ?? "no node"} leads afterwards (a failover Patroni should not have made)`,
          );
        continue;
      }
      if (!failover.leader || failover.leader === leader.name)
        violation(`${leader.name}'s machine was lost, and ${failover.leader ?? "no node"} leads afterwards`);
      // The lost machine comes back, as a standby of the new leader (rewound if it had gone ahead of it).
      await leader.start();
      await ha.healthy(60_000);
    }
  }

  /** A deposit through the front door, retried every 250 ms with its key until answered: when writes are served again. */
  private async firstWrite(accountIds: string[], within: number): Promise<number | undefined> {
    const accountId = pick(accountIds);
    const op = this.op(
      "deposit",
      `/api/v1/accounts/${accountId}/deposits`,
      { amount: "1.00", currency: "EUR" },
      { accountId, amount: "1.00" },
    );
    this.ops.push(op);
    const deadline = Date.now() + within;
    while (Date.now() < deadline) {
      const attempt = await this.send(op);
      op.attempts.push(attempt);
      if (attempt.status !== undefined && isAnswer(attempt.status)) {
        op.answer = attempt;
        return Date.now();
      }
      await sleep(250);
    }
    // Not answered: the soak's later checks send it again once the database is whole (`settle`).
    op.gaveUp = true;
    return undefined;
  }

  failoverSummary(): string {
    const lost = this.failovers.filter((f) => !f.pgOnly);
    const restart = this.failovers.find((f) => f.pgOnly);
    const s = (ms?: number) => (ms === undefined ? "?" : `${(ms / 1000).toFixed(1)} s`);
    return (
      `failover: ${this.ha?.synchronous() ? "synchronous" : "asynchronous"} replication; acknowledged-lost=${this.acknowledgedLost} of ${this.ops.filter((o) => o.answer).length} answered; ` +
      `${restart ? `PostgreSQL alone killed on ${restart.lost} -> ${restart.leader ?? "none"} leads (${restart.lost === restart.leader ? "restarted in place" : "FAILED OVER"}), first write after ${s(restart.toFirstWriteMs)}; ` : ""}` +
      `failovers=${lost.length}: ${lost.map((f) => `${f.lost} lost -> ${f.leader ?? "none"} leads, first write after ${s(f.toFirstWriteMs)}`).join("; ")}`
    );
  }

  private kill(instance: Instance): void {
    instance.kill("SIGKILL");
    this.down.add(instance);
    this.kills++;
    this.killEpoch++;
    for (const w of this.walkers) if (Math.random() < 0.3) w.abort();
    this.restarts.push(
      (async () => {
        await instance.exited();
        await sleep(between(300, 2500));
        await instance.restart();
        this.down.delete(instance);
      })().catch(
        (error: unknown) => void violation(`${instance.name} did not restart: ${error instanceof Error ? error.message : String(error)}`),
      ),
    );
  }

  /** Waits (bounded) until no key is in progress: the completers finish what the given-up clients left; then those clients come back once. */
  async settle(sql: postgres.Sql, tenantId: string): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const [row] = await sql<
        { n: number }[]
      >`select count(*)::int as n from idempotency_keys where tenant_id = ${tenantId} and state = 'in_progress'`;
      if (row!.n === 0) break;
      if (Date.now() > deadline) {
        violation(`${row!.n} key(s) still in progress 120 s after the traffic stopped`);
        break;
      }
      await sleep(500);
    }
    const completer = await sql<
      { key: string }[]
    >`select key from idempotency_keys where tenant_id = ${tenantId} and completed_by = 'completer'`;
    const byCompleter = new Set(completer.map((r) => r.key));
    if (this.abandoned && !byCompleter.has(this.abandoned.key))
      violation(`payment ${this.abandoned.key}: abandoned after a crash, and no completer finished it`);
    for (const op of this.ops.filter((o) => o.gaveUp)) {
      if (byCompleter.has(op.key)) this.completedByCompleter++;
      // The client that gave up comes back later: it must get the stored answer (or, if its attempt never reached an instance, run it now, once).
      const attempt = await this.send(op);
      op.attempts.push(attempt);
      if (attempt.status !== undefined && isAnswer(attempt.status)) op.answer ??= attempt;
      else violation(`${op.kind} ${op.key}: given up, and its later retry got no answer (${attempt.status ?? attempt.error})`);
    }
  }

  async check(sql: postgres.Sql, db: ReturnType<typeof drizzle<typeof schema>>, tenantId: string): Promise<void> {
    const keys = new Map(
      (
        await sql<{ key: string; state: string; response_status: number | null; response_body: string | null }[]>`
        select key, state, response_status, response_body from idempotency_keys where tenant_id = ${tenantId}`
      ).map((k) => [k.key, k]),
    );
    for (const op of this.ops) {
      const answers = op.attempts.filter((a) => a.status !== undefined && isAnswer(a.status));
      if (answers.length === 0) {
        violation(`${op.kind} ${op.key}: never answered`);
        continue;
      }
      const first = answers[0]!;
      for (const a of answers.slice(1)) {
        if (a.status !== first.status || a.body !== first.body)
          violation(`${op.kind} ${op.key}: answers differ: ${first.status} ${first.body} vs ${a.status} ${a.body}`);
      }
      const stored = keys.get(op.key);
      if (!stored || stored.response_status !== first.status || stored.response_body !== first.body) this.acknowledgedLost++;
      if (!stored) violation(`${op.kind} ${op.key}: answered ${first.status} but no key is stored`);
      else if (stored.response_status !== first.status || stored.response_body !== first.body) {
        violation(
          `${op.kind} ${op.key}: the stored answer (${stored.response_status} ${stored.response_body}) differs from the client's (${first.status} ${first.body})`,
        );
      }
    }
    for (const k of keys.values()) if (k.state === "in_progress") violation(`key ${k.key} left in progress`);

    // One execution per key: at most one payment, one order, one ledger transaction.
    const twice = await sql<{ what: string; key: string; n: number }[]>`
      select 'payments' as what, idempotency_key as key, count(*)::int as n from payments where tenant_id = ${tenantId} and idempotency_key is not null group by idempotency_key having count(*) > 1
      union all
      select 'orders', idempotency_key, count(*)::int from orders where tenant_id = ${tenantId} and idempotency_key is not null group by idempotency_key having count(*) > 1
      union all
      select 'ledger transactions', idempotency_key, count(distinct transaction_id)::int from ledger_entries where tenant_id = ${tenantId} and idempotency_key is not null group by idempotency_key having count(distinct transaction_id) > 1`;
    for (const t of twice) violation(`key ${t.key}: ${t.n} ${t.what} (executed more than once)`);

    // The provider's own records: one charge per successful payment, none that no payment explains.
    const listed = await createPspClient({ baseUrl: this.cluster.pspUrl, timeoutMs: 10_000 }).listCharges();
    if (listed.kind !== "ok") throw new Error(`cannot list the stand-in's charges (${listed.kind})`);
    const pays = await sql<{ id: string; status: string }[]>`select id, status from payments where tenant_id = ${tenantId}`;
    const chargesOf = new Map<string, number>();
    for (const c of listed.charges) chargesOf.set(c.reference ?? "", (chargesOf.get(c.reference ?? "") ?? 0) + 1);
    const paymentIds = new Set(pays.map((p) => p.id));
    for (const p of pays) {
      const n = chargesOf.get(p.id) ?? 0;
      if ((p.status === "succeeded" || p.status === "requires_capture") && n !== 1)
        violation(`payment ${p.id} (${p.status}): ${n} provider charges`);
      if (n > 1) violation(`payment ${p.id}: charged ${n} times`);
    }
    for (const [reference, n] of chargesOf)
      if (!paymentIds.has(reference)) violation(`${n} provider charge(s) with reference ${reference || "(none)"} belong to no payment`);
    this.charges = listed.charges.length;
    this.successfulPayments = pays.filter((p) => p.status === "succeeded").length;

    // Balances: what the answered deposits and withdrawals say, exactly; never negative.
    const expected = new Map<string, number>();
    for (const op of this.ops) {
      if (!op.accountId || op.answer?.status !== 201) continue;
      const minor = Math.round(Number(op.amount) * 100) * (op.kind === "withdrawal" ? -1 : 1);
      expected.set(op.accountId, (expected.get(op.accountId) ?? 0) + minor);
    }
    const balances = await sql<
      { id: string; balance: string }[]
    >`select id, balance_minor::text as balance from accounts where tenant_id = ${tenantId}`;
    for (const b of balances) {
      const balance = Number(b.balance);
      if (balance < 0) violation(`account ${b.id}: negative balance ${balance}`);
      if (balance !== (expected.get(b.id) ?? 0))
        violation(`account ${b.id}: balance ${balance} but the answered deposits and withdrawals make ${expected.get(b.id) ?? 0}`);
    }

    const differences = await reconcile(db, listed.charges, { tenantId, pendingGraceMs: 0 });
    for (const d of differences)
      violation(`reconcile: ${d.kind} ${[d.paymentId, d.chargeId, d.transactionId].filter(Boolean).join(" ")}: ${d.detail}`);
  }

  charges = 0;
  successfulPayments = 0;
  /** Answers a client got whose key is gone afterwards, or holds another answer. */
  acknowledgedLost = 0;

  summary(resentPosts: number, resentAll: number, seconds: number): string {
    const count = (kind: Kind) => this.ops.filter((o) => o.kind === kind).length;
    // Every attempt after the first (its copies included), but not the given-up client's one return at the end.
    const retries = this.ops.reduce((n, o) => n + o.attempts.length - o.firstCopies - (o.gaveUp ? 1 : 0), 0);
    const gaveUp = this.ops.filter((o) => o.gaveUp).length;
    return (
      `soak: ops=${this.ops.length} (payments ${count("payment")}, checkouts ${count("checkout")}, deposits ${count("deposit")}, withdrawals ${count("withdrawal")}) ` +
      `instances=${this.cluster.instances.length} kills=${this.kills} client-retries=${retries} double-submits=${this.ops.filter((o) => o.firstCopies === 2).length} ` +
      `haproxy-resends=${resentPosts} POST (${resentAll} in all) given-up=${gaveUp} completed-by-completer=${this.completedByCompleter} ` +
      `provider-charges=${this.charges} succeeded-payments=${this.successfulPayments} seconds=${seconds}`
    );
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`soak failed to run: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
