/**
 * The PSP stand-in as its own process:
 * `node --import tsx server/psp/main.ts`.
 *
 * Settings come from the environment, checked once here because this process
 * shares nothing with the app's `server/env.ts`:
 * - `PSP_PORT` (default 4010; 0 picks a free port),
 * - `PSP_SLOW_MS` (default 3000): how long `acct_test_slow` takes to answer,
 * - `PSP_DATA_FILE` (unset: memory only): the file the stand-in keeps its
 *   charges, refunds and stored answers in across restarts (journal.ts),
 * - `PSP_WEBHOOK_SECRET` (default `DEMO_WEBHOOK_SECRET`, the app's own demo value): the HMAC key for
 *   webhook signatures. The default is a public demo value, fine for a fake
 *   provider on localhost and for nothing else; the app must be given the
 *   same value; it also signs the control requests (`/webhooks/send`),
 * - `PSP_WEBHOOK_URLS` (comma-separated, default none): the only URLs
 *   `/webhooks/send` delivers to,
 * - `PSP_ALLOWED_HOSTS` (comma-separated host names, default none): names
 *   answered in `Host` besides the loopback ones,
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (unset: no tracing): where its spans go,
 *   each continuing the trace of the app's call (`traceparent`).
 */
import { z } from "zod";
import { DEMO_WEBHOOK_SECRET } from "../env-schema";
import { startTracing } from "../observability/tracing";
import { startPspStandIn } from "./stand-in";

const schema = z.object({
  PSP_PORT: z.coerce.number().int().min(0).max(65535).default(4010),
  PSP_SLOW_MS: z.coerce.number().int().min(0).default(3000),
  PSP_WEBHOOK_SECRET: z.string().min(1).default(DEMO_WEBHOOK_SECRET),
  PSP_DATA_FILE: z.string().min(1).optional(),
  PSP_WEBHOOK_URLS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((u) => u.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ protocol: /^https?$/ }))),
  PSP_ALLOWED_HOSTS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    ),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
});

const parsed = schema.safeParse(process.env);
if (!parsed.success) {
  const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
  process.stderr.write(`Invalid environment:\n${lines.join("\n")}\n`);
  process.exit(1);
}
const settings = parsed.data;
const supervised = typeof process.send === "function";
startTracing({ serviceName: "psp-stand-in", endpoint: settings.OTEL_EXPORTER_OTLP_ENDPOINT });

const standIn = await startPspStandIn({
  port: settings.PSP_PORT,
  host: "127.0.0.1",
  slowMs: settings.PSP_SLOW_MS,
  webhookSecret: settings.PSP_WEBHOOK_SECRET,
  dataFile: settings.PSP_DATA_FILE,
  webhookUrls: settings.PSP_WEBHOOK_URLS,
  allowedHosts: settings.PSP_ALLOWED_HOSTS,
}).catch((error: unknown) => {
  // One line (a port in use, a damaged records file), not a stack: the run command shows it to a person.
  process.stderr.write(`PSP stand-in cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
process.stderr.write(`PSP stand-in listening on ${standIn.url}\n`);
// Started by startPspProcess: tell it we listen, and stop when it goes (see process.ts).
if (process.connected) process.send?.({ listening: standIn.url });

let stopping = false;
async function stop(signal: NodeJS.Signals) {
  if (stopping) return;
  stopping = true;
  try {
    await standIn.close();
    process.exit(0);
  } catch (error) {
    process.stderr.write(`PSP stand-in failed to close on ${signal}: ${String(error)}\n`);
    process.exit(1);
  }
}
// `on`: a second signal (Ctrl-C reaches the whole group) must find a listener, not the default action.
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.once("disconnect", () => void stop("SIGHUP"));
// The supervisor may have gone while we were starting, before the listener above.
if (supervised && !process.connected) void stop("SIGHUP");
