/**
 * Runs the stand-in as its own process (the run command, the tests): reuses
 * one that already answers on the port (another server of this machine runs
 * it), else spawns `server/psp/main.ts` and waits until it says it listens.
 * The child is tied to us by an IPC channel: when we end, however we end
 * (SIGKILL included), the channel closes and the stand-in stops itself, so a
 * killed run leaves no stand-in behind and nothing holds the run's output
 * open. `stop` ends only a process started here.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** `pid`: of the process started here; absent when one that already ran is reused. */
export type PspProcess = { url: string; pid?: number; stop: () => Promise<void> };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Where a stand-in on `port` keeps its records when the payments it pairs
 * with live in the embedded cluster at `embeddedDir`: beside that cluster,
 * so they stay together (deleting both starts afresh), one file per port.
 * `npm start` and `npm run cluster` share it, so either sees the other's charges.
 */
export const recordsBesideEmbedded = (embeddedDir: string, port: number) => path.join(path.dirname(embeddedDir), `psp-${port}.jsonl`);

/** A busy machine (two cores, builds running) can take long to load tsx and the stand-in. */
const READY_TIMEOUT_MS = 120_000;

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * `dataFile`: where the stand-in keeps its records across restarts; unset, in memory only (the tests' own stand-in).
 * `webhookUrls`: the only URLs the stand-in delivers webhooks to (see stand-in.ts).
 */
export async function startPspProcess(options: {
  port: number;
  slowMs: number;
  webhookSecret: string;
  dataFile?: string;
  webhookUrls?: readonly string[];
}): Promise<PspProcess> {
  const url = `http://127.0.0.1:${options.port}`;
  if (await healthy(url)) return { url, stop: async () => undefined };
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "server/psp/main.ts")], {
    cwd: root,
    env: {
      ...process.env,
      PSP_PORT: String(options.port),
      PSP_SLOW_MS: String(options.slowMs),
      PSP_WEBHOOK_SECRET: options.webhookSecret,
      PSP_WEBHOOK_URLS: (options.webhookUrls ?? []).join(","),
      ...(options.dataFile ? { PSP_DATA_FILE: options.dataFile } : {}),
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const stop = async () => {
    // Waiting for its exit must keep this process alive (it was unref'd once ready).
    child.ref();
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  const outcome = await Promise.race([
    new Promise<"ready">((resolve) => child.once("message", () => resolve("ready"))),
    exited.then((code) => `exited with code ${code}` as const),
    new Promise<"timeout">((resolve) => setTimeout(resolve, READY_TIMEOUT_MS, "timeout").unref()),
  ]);
  if (outcome === "ready" && (await healthy(url))) {
    // From now on the child must not keep this process alive; the channel's closing is its signal to stop.
    child.unref();
    child.channel?.unref();
    return { url, pid: child.pid, stop };
  }
  await stop();
  // Another server started at the same moment may have won the port: its stand-in serves us as well.
  if (outcome !== "ready" && outcome !== "timeout" && (await healthy(url))) return { url, stop: async () => undefined };
  const why =
    outcome === "ready"
      ? "it listens, but its health check fails (a port Node's fetch refuses?)"
      : outcome === "timeout"
        ? `it did not listen within ${READY_TIMEOUT_MS / 1000} s`
        : `it ${outcome}`;
  throw new Error(`The PSP stand-in on ${url} did not start: ${why}`);
}
