/**
 * The one place that reads `process.env`: parsed once at start-up by the
 * check in env-schema.ts (which `next.config.js` also runs, so `next build`
 * refuses a bad setting too).
 */
import { parseEnv, type Env } from "./env-schema";

export { BAD_PORTS, DEFAULT_PSP_PORT, DEMO_ADMIN_PASSWORD, type Env } from "./env-schema";

export const env: Env = parseEnv(process.env, { building: process.env.NEXT_PHASE === "phase-production-build" });
