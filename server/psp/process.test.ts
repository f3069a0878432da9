/**
 * Issue 54: two servers on one machine. The stand-in a server starts is its
 * own: a port held by another database's stand-in (or any other program)
 * is traded for a free one when the port was not chosen, and refused when
 * it was; only a stand-in keeping the same records is shared. Real sockets
 * and real processes throughout.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../db/ports";
import { createPspClient } from "./client";
import { PspPortTakenError, recordsBesideEmbedded, startPspProcess, type PspProcess } from "./process";
import { startPspStandIn, type RunningPspStandIn } from "./stand-in";

const SECRET = "whsec_test_only";
let dir: string;
let port: number;
const cleanups: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "eo-psp-process-"));
  port = await freePort();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Another database's stand-in, in this process, on `port`. */
async function foreignStandIn(records?: string): Promise<RunningPspStandIn> {
  const other = await startPspStandIn({ port, slowMs: 0, webhookSecret: SECRET, dataFile: records });
  cleanups.push(() => other.close());
  return other;
}

async function start(options: { ifTaken?: "refuse" | "pick-free"; dataFile?: string }): Promise<PspProcess> {
  const psp = await startPspProcess({ port, slowMs: 0, webhookSecret: SECRET, ...options });
  cleanups.push(psp.stop);
  return psp;
}

async function chargeIds(url: string): Promise<string[]> {
  const listed = await createPspClient({ baseUrl: url, timeoutMs: 5000 }).listCharges();
  if (listed.kind !== "ok") throw new Error(`listing charges at ${url}: ${listed.kind}`);
  return listed.charges.map((c) => c.id);
}

describe("a stand-in on a port that is not taken", () => {
  it("listens on the port asked for", async () => {
    const psp = await start({ ifTaken: "pick-free", dataFile: path.join(dir, "psp.jsonl") });
    expect(psp.url).toBe(`http://127.0.0.1:${port}`);
    expect(psp.pid).toBeDefined();
  });
});

describe("a port held by another database's stand-in", () => {
  it("unset PSP_PORT (pick-free): starts a stand-in of its own on a free port, and the charges stay apart", async () => {
    const other = await foreignStandIn(path.join(dir, "other.jsonl"));
    const psp = await start({ ifTaken: "pick-free", dataFile: path.join(dir, "mine.jsonl") });
    expect(psp.port).not.toBe(port);
    expect(psp.url).toBe(`http://127.0.0.1:${psp.port}`);
    expect(psp.pid).toBeDefined();

    const charged = await createPspClient({ baseUrl: psp.url, timeoutMs: 5000 }).charge(
      { amount: 1200, currency: "EUR", destination: "acct_test_ok" },
      "issue-54-own-charge",
    );
    expect(charged.kind).toBe("ok");
    const id = charged.kind === "ok" ? charged.charge.id : "";
    expect(await chargeIds(psp.url)).toEqual([id]);
    expect(await chargeIds(other.url)).toEqual([]);
  });

  it("a memory-only stand-in is nobody's to share: one with no records file starts its own too", async () => {
    await foreignStandIn();
    const psp = await start({ ifTaken: "pick-free" });
    expect(psp.port).not.toBe(port);
    expect(psp.pid).toBeDefined();
  });

  it("PSP_PORT set (refuse): fails with one line naming PSP_PORT, and starts nothing", async () => {
    await foreignStandIn(path.join(dir, "other.jsonl"));
    const started = start({ ifTaken: "refuse", dataFile: path.join(dir, "mine.jsonl") });
    await expect(started).rejects.toBeInstanceOf(PspPortTakenError);
    await expect(started).rejects.toThrow(new RegExp(`^PSP_PORT=${port} is taken \\(another server's stand-in, or another program\\)`));
    const message = await started.then(
      () => "",
      (error: Error) => error.message,
    );
    expect(message.split("\n")).toHaveLength(1);
  });
});

describe("a port held by a program that is not a stand-in", () => {
  let squatter: Server;
  beforeEach(async () => {
    squatter = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => squatter.listen(port, "127.0.0.1", resolve));
  });
  afterEach(() => new Promise<void>((resolve) => squatter.close(() => resolve())));

  it("pick-free: a free port instead", async () => {
    const psp = await start({ ifTaken: "pick-free", dataFile: path.join(dir, "mine.jsonl") });
    expect(psp.port).not.toBe(port);
    expect(await chargeIds(psp.url)).toEqual([]);
  });

  it("refuse: the same one line", async () => {
    await expect(start({ ifTaken: "refuse", dataFile: path.join(dir, "mine.jsonl") })).rejects.toBeInstanceOf(PspPortTakenError);
  });
});

describe("a port held by a stand-in of the same records (two runs on one database)", () => {
  it.each(["refuse", "pick-free"] as const)("%s: shares it and stops nothing of it", async (ifTaken) => {
    const records = path.join(dir, "psp.jsonl");
    const same = await foreignStandIn(records);
    const psp = await start({ ifTaken, dataFile: records });
    expect(psp.url).toBe(same.url);
    expect(psp.pid).toBeUndefined();
    await psp.stop();
    expect(await chargeIds(same.url)).toEqual([]);
  });
});

describe("recordsBesideEmbedded", () => {
  it("keeps the name it always had for a cluster called pg, and gives any other cluster in the folder its own file", () => {
    expect(recordsBesideEmbedded("/x/.data/pg", 4010)).toBe("/x/.data/psp-4010.jsonl");
    expect(recordsBesideEmbedded("/x/.data/pg2", 4010)).toBe("/x/.data/pg2.psp-4010.jsonl");
  });
});
