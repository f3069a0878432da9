/**
 * Runs the stand-in as its own process (the run command, the cluster, the
 * tests): spawns `server/psp/main.ts` and waits until it says it listens.
 * The child is tied to us by an IPC channel: when we end, however we end
 * (SIGKILL included), the channel closes and the stand-in stops itself, so a
 * killed run leaves no stand-in behind and nothing holds the run's output
 * open. `stop` ends only a process started here.
 *
 * A server never uses another database's stand-in: its charges would land in
 * records the other server reconciles, and the other's in its own
 * reconciliation. So a stand-in already on the port is used only when it
 * keeps the very records this one would (the same records file: the same
 * database, as when two runs share one cluster); anything else there means
 * the port is taken. A taken port is refused when the user chose it
 * (`ifTaken: "refuse"`), or traded for a free one (`"pick-free"`).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, portFree } from "../../db/ports";
import { recordsDigest } from "./stand-in";

/** `pid`: of the process started here; absent when the stand-in of the same records is used. */
export type PspProcess = { url: string; port: number; pid?: number; stop: () => Promise<void> };

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Where a stand-in keeps its records when the payments it pairs with live in
 * the embedded cluster at `embeddedDir`: beside that cluster, so they stay
 * together (deleting both starts afresh). `port` is the port asked for, not
 * the one a taken port was traded for, so a restart finds them again.
 * `npm start` and `npm run cluster` share them, so either sees the other's
 * charges. A cluster named other than `pg` puts its name first, so two
 * clusters in one folder never share a file.
 */
export function recordsBesideEmbedded(embeddedDir: string, port: number): string {
  const name = path.basename(embeddedDir);
  return path.join(path.dirname(embeddedDir), `${name === "pg" ? "" : `${name}.`}psp-${port}.jsonl`);
}

/** The port the user chose is taken by something that is not a stand-in of the same records: one line that says what to do. */
export class PspPortTakenError extends Error {
  override readonly name = "PspPortTakenError";
  constructor(readonly port: number) {
    super(
      `PSP_PORT=${port} is taken (another server's stand-in, or another program): choose a free PSP_PORT, or leave it unset and the server picks one.`,
    );
  }
}

/** A busy machine (two cores, builds running) can take long to load tsx and the stand-in. */
const READY_TIMEOUT_MS = 120_000;
/** How many taken ports "pick-free" goes through (each one lost to a faster start) before it gives up. */
const PICK_ATTEMPTS = 3;

type Health = { status?: string; records?: string };

async function health(url: string): Promise<Health | undefined> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? ((await res.json()) as Health) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the stand-in at `url` keeps `dataFile`'s records (one with no file keeps nobody's). */
async function keepsRecords(url: string, dataFile: string | undefined): Promise<boolean> {
  if (dataFile === undefined) return false;
  return (await health(url))?.records === recordsDigest(dataFile);
}

type StandInOptions = {
  slowMs: number;
  webhookSecret: string;
  dataFile?: string;
  webhookUrls?: readonly string[];
};

/**
 * `port`: the port asked for. `ifTaken`: what a taken port means: an error
 * naming PSP_PORT (the default: the user or the caller chose it), or a free port instead.
 * `dataFile`: where the stand-in keeps its records across restarts; unset, in memory only (the tests' own stand-in).
 * `webhookUrls`: the only URLs the stand-in delivers webhooks to (see stand-in.ts).
 */
export async function startPspProcess(options: StandInOptions & { port: number; ifTaken?: "refuse" | "pick-free" }): Promise<PspProcess> {
  for (let attempt = 1, port = options.port; ; attempt++, port = await freePort()) {
    const url = `http://127.0.0.1:${port}`;
    const sameRecords = async () => ((await keepsRecords(url, options.dataFile)) ? { url, port, stop: async () => undefined } : undefined);
    if (!(await portFree(port))) {
      const shared = await sameRecords();
      if (shared) return shared;
      if (options.ifTaken !== "pick-free") throw new PspPortTakenError(port);
      continue;
    }
    const started = await spawnStandIn(port, options);
    if (typeof started !== "string") return started;
    // Lost the port to a start at the same moment: theirs serves us if it keeps our records, else it is taken.
    if (!(await portFree(port))) {
      const shared = await sameRecords();
      if (shared) return shared;
      if (options.ifTaken !== "pick-free") throw new PspPortTakenError(port);
      if (attempt < PICK_ATTEMPTS) continue;
    }
    throw new Error(`The PSP stand-in on ${url} did not start: ${started}`);
  }
}

/** The stand-in started on `port`, or why it did not. */
async function spawnStandIn(port: number, options: StandInOptions): Promise<PspProcess | string> {
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "server/psp/main.ts")], {
    cwd: root,
    env: {
      ...process.env,
      PSP_PORT: String(port),
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
  if (outcome === "ready" && (await health(url))) {
    // From now on the child must not keep this process alive; the channel's closing is its signal to stop.
    child.unref();
    child.channel?.unref();
    return { url, port, pid: child.pid, stop };
  }
  await stop();
  return outcome === "ready"
    ? "it listens, but its health check fails (a port Node's fetch refuses?)"
    : outcome === "timeout"
      ? `it did not listen within ${READY_TIMEOUT_MS / 1000} s`
      : `it ${outcome}`;
}
