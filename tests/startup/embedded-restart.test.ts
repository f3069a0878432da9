/**
 * Issue 14, embedded PostgreSQL: the server keeps the cluster it runs. When
 * the postmaster dies (SIGKILL here), the server starts it again on the same
 * port and serves on, without a restart by hand; when the server stops, so
 * does the cluster.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { beforeAll, expect, it } from "vitest";
import { scratchClusterParent } from "../../db/cluster-home";
import { freePort } from "../../db/embedded";
import { ensureBuild, health, postmasterOf, running, spawnServer, waitFor } from "./support";

beforeAll(() => ensureBuild(() => undefined), 600_000);

it("starts its embedded cluster again when it dies, and stops it when the server stops", async () => {
  const parent = scratchClusterParent("revive");
  const dir = path.join(parent, "pg");
  const server = await spawnServer({ DATABASE_URL: undefined, EMBEDDED_PG_DIR: dir, EMBEDDED_PG_PORT: String(await freePort()) });
  try {
    await waitFor("the server to serve", async () => ((await health(server)).status === 200 ? true : undefined));
    const first = postmasterOf(dir);
    expect(first).toBeGreaterThan(0);
    process.kill(first, "SIGKILL");
    await waitFor("a new postmaster", async () => {
      const pid = postmasterOf(dir);
      return pid > 0 && pid !== first && running(pid) ? pid : undefined;
    });
    const served = await waitFor("the server to serve again", async () => {
      const h = await health(server);
      return h.status === 200 ? h : undefined;
    });
    expect(served.body).toEqual({ status: "ok", database: "up" });
    const second = postmasterOf(dir);
    expect(await server.stop()).toBe(0);
    expect(running(second)).toBe(false);
  } finally {
    await server.stop();
    rmSync(parent, { recursive: true, force: true });
  }
});
