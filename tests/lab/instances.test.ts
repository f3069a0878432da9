/**
 * Lab runs across app instances (issue 13 puts several behind HAProxy): a
 * run started and partly played on one instance (a child process with its
 * own memory and pool) is played on and reported by another (this process),
 * and the other way round. The report is the same wherever it is built,
 * holds every step in order, and counts from the database and the provider.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { database } from "../../db/client";
import { LAB_RUN_HEADER } from "../../server/lab/scenarios";
import { appWith } from "../support/app";

const run = promisify(execFile);
const BASE = "http://127.0.0.1/api/trpc";
/** Every call here is in demo mode; the process's app, as tests run, has it off. */
const demo = appWith({ DEMO_MODE: true });
const { GET, POST } = demo.trpc;

/** The other instance: same database and provider, demo mode, nothing shared in memory. */
async function onOtherInstance(...args: string[]) {
  const { ADMIN_PASSWORD: _unset, ...inherited } = process.env;
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  const { stdout } = await run(process.execPath, ["--import", "tsx", "tests/lab/instance-child.ts", ...args], {
    env: {
      ...inherited,
      DATABASE_URL: inject("databaseUrl"),
      PSP_URL: inject("pspUrl"),
      DEMO_MODE: "true",
      LOG_LEVEL: "silent",
      LAB_CART: JSON.stringify({ items: [{ sku: product!.sku, quantity: 1 }] }),
    },
  });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
}

type Report = {
  counts: { payments: number; providerCharges: number; chargeMovements: number };
  steps: { t: number; from: string; to: string; label: string }[];
};

async function reportHere(runId: string): Promise<Report> {
  const res = await GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId }))}`));
  expect(res.status).toBe(200);
  return (JSON.parse(await res.text()) as { result: { data: Report } }).result.data;
}

async function payHere(runId: string, procedure: string, headers: Record<string, string>, destination: string) {
  const [product] = await database().sql<{ sku: string }[]>`select sku from products order by sku limit 1`;
  return POST(
    new Request(`${BASE}/${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/json", [LAB_RUN_HEADER]: runId, ...headers },
      body: JSON.stringify({ items: [{ sku: product!.sku, quantity: 1 }], destination }),
    }),
  );
}

describe("a lab run across two app instances", () => {
  it("started on one, its answer lost there, retried and reported on the other: one payment, every step, the same report on both", async () => {
    const started = (await onOtherInstance("start", "lost-answer", "protected")) as {
      runId: string;
      key: string;
      destination: string;
      first: string;
    };
    // The switch fired on the other instance, once.
    expect(started.first).toBe("lost");

    const retry = await payHere(started.runId, "checkout.pay", { "idempotency-key": started.key }, started.destination);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");

    const here = await reportHere(started.runId);
    expect(here.counts).toMatchObject({ payments: 1, providerCharges: 1, chargeMovements: 1 });
    const lines = here.steps.map((s) => `${s.from} → ${s.to}: ${s.label}`);
    expect(lines[0]).toMatch(/^browser → app: request #1: checkout.pay with key/);
    expect(lines).toContainEqual(expect.stringMatching(/^app → browser: answer to #1 \(200\) lost on the way \(simulated\)$/));
    expect(lines).toContainEqual(expect.stringMatching(/^browser → app: request #2: checkout.pay with key/));
    expect(lines.at(-1)).toBe("app → browser: answer to #2: 200 (replayed)");
    expect(here.steps.map((s) => s.t)).toEqual(here.steps.map((s) => s.t).sort((x, y) => x - y));

    expect(await onOtherInstance("report", started.runId)).toEqual(here);
  });

  it("the twin started on one instance and paid again on the other: both payments counted, from either", async () => {
    const started = (await onOtherInstance("start", "double-click", "naive")) as { runId: string; destination: string; first: string };
    expect(started.first).toBe("answered");
    expect((await payHere(started.runId, "lab.naivePay", {}, started.destination)).status).toBe(200);

    const here = await reportHere(started.runId);
    expect(here.counts).toMatchObject({ payments: 2, providerCharges: 2, chargeMovements: 2 });
    expect(here.steps.filter((s) => /^request #\d: lab.naivePay without a key$/.test(s.label)).map((s) => s.label)).toEqual([
      "request #1: lab.naivePay without a key",
      "request #2: lab.naivePay without a key",
    ]);
    expect(await onOtherInstance("report", started.runId)).toEqual(here);
  });
});
