/**
 * Runs the stand-in as its own process (the run command, the tests): reuses
 * one that already answers on the port (a previous run killed with SIGKILL
 * leaves it behind), else spawns `server/psp/main.ts` and waits until it is
 * healthy. `stop` ends only a process started here.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export type PspProcess = { url: string; stop: () => Promise<void> };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(500) });
    return res.ok;
  } catch {
    return false;
  }
}

export async function startPspProcess(options: { port: number; slowMs: number; webhookSecret: string }): Promise<PspProcess> {
  const url = `http://127.0.0.1:${options.port}`;
  if (await healthy(url)) return { url, stop: async () => undefined };
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "server/psp/main.ts")], {
    cwd: root,
    env: { ...process.env, PSP_PORT: String(options.port), PSP_SLOW_MS: String(options.slowMs), PSP_WEBHOOK_SECRET: options.webhookSecret },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  for (let i = 0; i < 100; i++) {
    if (await healthy(url)) {
      return {
        url,
        stop: async () => {
          if (child.exitCode === null) child.kill("SIGTERM");
          await exited;
        },
      };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`The PSP stand-in did not become healthy on ${url}`);
}
