/**
 * Issue 25, stopping: Ctrl-C sends SIGINT to the terminal's whole process
 * group, so the run command, Next.js and the stand-in each get it, and the
 * run command forwards it once more. A server whose handler was gone by the
 * second signal died on the spot and left its embedded PostgreSQL running.
 * Here the run command is started in a group of its own and signalled 20
 * times in a row; afterwards nothing it started may be left: no process, no
 * postmaster, nothing listening on its ports.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { scratchClusterParent } from "../../db/cluster-home";
import { freePort } from "../../db/embedded";
import { ensureBuild, health, postmasterOf, running, sleep, spawnServer, waitFor } from "./support";

beforeAll(() => ensureBuild(() => undefined), 600_000);

const RUN_COMMAND = [process.execPath, "--import", "tsx", "scripts/start.ts"];
const SIGNALS = 20;

/** Every live descendant of `pid`, children before grandchildren. */
function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const d of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parents.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone between the listing and the read.
    }
  }
  const found: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    const next = [...parents].filter(([, parent]) => queue.includes(parent)).map(([child]) => child);
    found.push(...next);
    queue = next;
  }
  return found;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

describe("the run command under repeated signals", () => {
  it.each([
    ["SIGINT", "the process group (Ctrl-C)"],
    ["SIGTERM", "the process group"],
    ["SIGTERM", "the run command alone"],
  ] as const)(`%s ${SIGNALS} times to %s stops everything it started`, async (signal, target) => {
    const parent = scratchClusterParent("signals");
    const dir = path.join(parent, "pg");
    const [port, pspPort, pgPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const env = {
      DATABASE_URL: undefined,
      PSP_URL: undefined,
      EMBEDDED_PG_DIR: dir,
      EMBEDDED_PG_PORT: String(pgPort),
      PSP_PORT: String(pspPort),
      PORT: String(port),
    };
    const server = await spawnServer(env, RUN_COMMAND, { group: true });
    try {
      await waitFor("the run to serve", async () => ((await health(server)).status === 200 ? true : undefined));
      const pid = server.child.pid!;
      const postmaster = postmasterOf(dir);
      const started = descendantsOf(pid);
      expect(running(postmaster)).toBe(true);
      expect(await listening(pspPort)).toBe(true);
      // Next.js and the stand-in at least (PostgreSQL runs in a group of its own, reparented).
      expect(started.length).toBeGreaterThanOrEqual(2);

      for (let i = 0; i < SIGNALS; i++) {
        try {
          process.kill(target === "the run command alone" ? pid : -pid, signal);
        } catch (error) {
          // ESRCH: everything in the group has already gone, which is the point.
          if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
        }
        await sleep(20);
      }
      expect(await server.exited).toBe(0);
      expect({ postmaster: running(postmaster), left: [pid, ...started].filter(running) }).toEqual({ postmaster: false, left: [] });
      expect(await Promise.all([port, pspPort, pgPort].map(listening))).toEqual([false, false, false]);
    } finally {
      try {
        process.kill(-server.child.pid!, "SIGKILL");
      } catch {
        // Already gone.
      }
      const postmaster = postmasterOf(dir);
      if (running(postmaster)) process.kill(postmaster, "SIGQUIT");
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
