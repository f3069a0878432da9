/**
 * Security headers on every response, defined once: Next.js sends them
 * (next.config.js loads this module) and so does the HTTP edge on the answers
 * it gives before Next.js sees a request (node-edge.ts). The CSP follows the
 * Next.js guide's variant without nonces: Next.js inlines small bootstrap
 * scripts, and a nonce would force every page to render per request, so
 * scripts and styles allow 'unsafe-inline' (plus 'unsafe-eval' under
 * `next dev`, for React's debugging); everything else is this origin only.
 * `frame-ancestors 'none'` (with X-Frame-Options for older browsers) keeps
 * /admin out of frames.
 */
export type SecurityHeader = { key: string; value: string };

export function securityHeaders(dev: boolean): SecurityHeader[] {
  const contentSecurityPolicy = [
    "default-src 'self'",
    `script-src 'self' 'unsafe-inline'${dev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
  return [
    { key: "Content-Security-Policy", value: contentSecurityPolicy },
    { key: "X-Frame-Options", value: "DENY" },
    { key: "X-Content-Type-Options", value: "nosniff" },
    { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
  ];
}
