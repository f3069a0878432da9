/**
 * Watches the database of a running server: a `select 1` every second on a
 * connection of its own (the pool may be busy, and must not be what decides),
 * reporting each change between up and down, and giving a dead embedded
 * cluster to `revive`.
 */
import postgres from "postgres";
import { reconnectBackoff } from "./client";

export type MonitorOptions = {
  url: string;
  onChange: (up: boolean) => void;
  revive?: () => Promise<void>;
  everyMs?: number;
  /** Behind a transaction-mode pooler (as the pool is opened). */
  pooled?: boolean;
};

const PROBE_TIMEOUT_MS = 3000;

/** `stop` resolves once a check in flight (a revive included) has finished, so nothing starts after it. */
export function startDatabaseMonitor({ url, onChange, revive, everyMs = 1000, pooled = false }: MonitorOptions): {
  stop: () => Promise<void>;
} {
  // Behind a transaction pooler the probe's statement would be prepared on one server session and
  // looked up on another (postgres-js re-prepares it then, a wasted round trip): unnamed, as the pool's.
  const probe = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: PROBE_TIMEOUT_MS / 1000,
    backoff: reconnectBackoff,
    prepare: !pooled,
  });
  let up = true;
  let checking: Promise<void> | undefined;
  const check = async () => {
    const answered = probe`select 1`.then(
      () => true,
      () => false,
    );
    const ok = await Promise.race([answered, new Promise<boolean>((r) => setTimeout(r, PROBE_TIMEOUT_MS, false))]);
    if (!ok && revive) await revive().catch(() => undefined);
    if (ok !== up) {
      up = ok;
      onChange(ok);
    }
  };
  const timer = setInterval(() => {
    if (checking) return;
    checking = check().finally(() => (checking = undefined));
  }, everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await checking;
      await probe.end({ timeout: 1 });
    },
  };
}
