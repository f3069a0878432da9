/**
 * Issue 25: the stand-in keeps its records across restarts, as a real
 * provider does. Each test runs a stand-in on a file, makes changes over real
 * HTTP, closes it, starts a new one on the same file and asks it.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startPspStandIn, type RunningPspStandIn } from "./stand-in";

let dir: string;
let file: string;
let running: RunningPspStandIn | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "psp-journal-"));
  file = path.join(dir, "psp.jsonl");
});
afterEach(async () => {
  await running?.close();
  running = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A new stand-in on the file, the previous one closed first (a restart). */
async function restart(): Promise<RunningPspStandIn> {
  await running?.close();
  running = await startPspStandIn({ port: 0, slowMs: 0, webhookSecret: "whsec_test_only", dataFile: file });
  return running;
}

async function call(method: string, pathname: string, body?: unknown, key?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["idempotency-key"] = key;
  const response = await fetch(`${running!.url}${pathname}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text(), replayed: response.headers.get("idempotent-replayed") === "true" };
}
const charges = async () =>
  JSON.parse((await call("GET", "/charges")).text) as {
    data: { id: string; status: string; amountRefunded: number; refunds: unknown[] }[];
  };

describe("the stand-in on a file", () => {
  it("keeps charges, their changes, refunds and stored answers across a restart", async () => {
    await restart();
    const key = `charge-${crypto.randomUUID()}`;
    const charge = await call(
      "POST",
      "/charges",
      { amount: 2500, currency: "EUR", destination: "acct_x", capture: true, reference: "pay_1" },
      key,
    );
    expect(charge.status).toBe(201);
    const { id } = JSON.parse(charge.text) as { id: string };
    expect((await call("POST", `/charges/${id}/refunds`, { amount: 500 }, `refund-${crypto.randomUUID()}`)).status).toBe(201);
    const held = JSON.parse(
      (
        await call(
          "POST",
          "/charges",
          { amount: 700, currency: "EUR", destination: "acct_x", capture: false },
          `hold-${crypto.randomUUID()}`,
        )
      ).text,
    ) as { id: string };
    expect((await call("POST", `/charges/${held.id}/void`, {}, `void-${crypto.randomUUID()}`)).status).toBe(200);
    const declined = await call(
      "POST",
      "/charges",
      { amount: 100, currency: "EUR", destination: "acct_test_decline", capture: true },
      `decline-${crypto.randomUUID()}`,
    );
    const before = await charges();

    await restart();
    expect(await charges()).toEqual(before);
    expect(before.data.map((c) => [c.status, c.amountRefunded, c.refunds.length])).toEqual([
      ["succeeded", 500, 1],
      ["canceled", 0, 0],
    ]);
    // The same key again: the stored answer, byte for byte, and no second charge.
    const again = await call(
      "POST",
      "/charges",
      { amount: 2500, currency: "EUR", destination: "acct_x", capture: true, reference: "pay_1" },
      key,
    );
    expect(again).toEqual({ status: 201, text: charge.text, replayed: true });
    expect((await call("GET", `/keys/${key}`)).status).toBe(200);
    expect(JSON.parse((await call("GET", "/charges")).text)).toEqual(before);
    // A decline is a stored answer too.
    expect(JSON.parse(declined.text)).toMatchObject({ error: { type: "card_declined" } });
    // The same key with another request is still a mismatch after the restart.
    expect((await call("POST", "/charges", { amount: 9999, currency: "EUR", destination: "acct_x", capture: true }, key)).status).toBe(422);
  });

  it("drops a last line cut off by a kill mid-write, and appends after it cleanly", async () => {
    await restart();
    await call("POST", "/charges", { amount: 2500, currency: "EUR", destination: "acct_x", capture: true }, `a-${crypto.randomUUID()}`);
    await running!.close();
    running = undefined;
    appendFileSync(file, '{"kind":"charge","charge":{"id":"ch_cut');
    await restart();
    expect((await charges()).data).toHaveLength(1);
    await call("POST", "/charges", { amount: 100, currency: "EUR", destination: "acct_x", capture: true }, `b-${crypto.randomUUID()}`);
    await restart();
    expect((await charges()).data).toHaveLength(2);
    expect(readFileSync(file, "utf8").endsWith("}\n")).toBe(true);
  });

  it("refuses to start on a damaged file, naming it, rather than forget charges", async () => {
    writeFileSync(file, "not json\n");
    await expect(restart()).rejects.toThrow(`The stand-in's records in ${file} are damaged at line 1`);
  });
});
