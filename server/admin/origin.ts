/**
 * Whether a state-changing admin request comes from the app's own pages.
 *
 * SameSite=Lax cookies stop other sites, not another port of the same host:
 * a page on 127.0.0.1:<other port> is "same-site" and its forms carry the
 * admin cookie. So the rule is same *origin*:
 * - `Origin` present: its host and port must be this server's (`X-Forwarded-Host`
 *   as a proxy sets it, else `Host`), the rule Next.js applies to its own
 *   server actions. `Origin: null` (sandboxed frames, some redirects) fails.
 * - `Origin` absent: `Sec-Fetch-Site` must say `same-origin`.
 * - neither: refused. Every current browser sends `Origin` on a POST, so only
 *   a non-browser client lacks both, and it can send `Origin` itself.
 */
import { DomainError } from "../errors";
import { isJsonContentType } from "../rest/body";

export type OriginVerdict = { ok: true } | { ok: false; reason: string };

/** The one refusal a verdict stands for, wherever the rule is checked: a 403 problem. */
export function enforce(verdict: OriginVerdict): void {
  if (!verdict.ok) throw new DomainError("forbidden-origin", 403, verdict.reason);
}

export function ownHost(headers: Headers): string | undefined {
  return headers.get("x-forwarded-host")?.split(",")[0]?.trim() || headers.get("host") || undefined;
}

export function checkSameOrigin(headers: Headers): OriginVerdict {
  const origin = headers.get("origin");
  if (origin !== null) {
    const host = ownHost(headers);
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host;
    } catch {
      originHost = undefined;
    }
    if (host && originHost && originHost === host.toLowerCase()) return { ok: true };
    return { ok: false, reason: "The request comes from another origin." };
  }
  const site = headers.get("sec-fetch-site");
  if (site === "same-origin") return { ok: true };
  if (site !== null) return { ok: false, reason: `The request comes from another origin (Sec-Fetch-Site: ${site}).` };
  return { ok: false, reason: "The request carries neither Origin nor Sec-Fetch-Site; admin changes need one." };
}

/**
 * The whole rule for a request that changes admin state: same origin, and a
 * JSON body (a plain HTML form can send neither JSON nor a custom header).
 */
export function checkAdminChange(headers: Headers): OriginVerdict {
  const origin = checkSameOrigin(headers);
  if (!origin.ok) return origin;
  if (!isJsonContentType(headers)) return { ok: false, reason: "Admin changes are sent as application/json." };
  return { ok: true };
}
