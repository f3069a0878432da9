/**
 * Sign-in and sign-out at /admin/session: only from the app's own origin and
 * as JSON; throttled per client address and overall with 429 + Retry-After,
 * counted in PostgreSQL so that parallel guesses and other instances count
 * too; sign-out revokes the session, so a copied cookie stops working.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { ADMIN_COOKIE } from "../../server/admin/session";
import { signInRequest, signOutRequest } from "../../server/admin/sign-in";
import { createSignInThrottle, SIGN_IN_LIMITS } from "../../server/admin/throttle";
import { barrier, trpcError } from "../support/api";
import { callerWith, SAME_ORIGIN } from "./support";

const PASSWORD = "test-admin-password";
vi.mock("../../server/env", async (original) => {
  const { env } = await original<typeof import("../../server/env")>();
  return { env: { ...env, ADMIN_PASSWORD: "test-admin-password" } };
});

/** Every test signs in from an address of its own, so their counters never meet. */
const newAddress = () => `198.51.100.${Math.floor(Math.random() * 250)}-${randomUUID()}`;

function signInRequestFrom(address: string, body: unknown, headers: Record<string, string> = {}) {
  return new Request("http://app.test/admin/session", {
    method: "POST",
    // An empty value drops the header.
    headers: Object.fromEntries(Object.entries({ ...SAME_ORIGIN, "x-forwarded-for": address, ...headers }).filter(([, v]) => v !== "")),
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const sessionRows = async () => Number((await database().sql<{ n: string }[]>`select count(*) as n from admin_sessions`)[0]!.n);

function cookieOf(res: Response): string {
  const cookie = res.headers.get("set-cookie") ?? "";
  expect(cookie).toMatch(new RegExp(`^${ADMIN_COOKIE}=v1\\.`));
  expect(cookie).toContain("HttpOnly");
  return cookie.split(";")[0]!;
}

describe("sign-in", () => {
  it("signs in with the password and returns only to admin paths", async () => {
    const res = await signInRequest(signInRequestFrom(newAddress(), { password: PASSWORD, next: "//evil.example/admin" }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ next: "/admin" });
    const c = await callerWith({ cookie: cookieOf(res) });
    await expect(c.admin.keys.counts({})).resolves.toBeDefined();
  });

  it.each([
    ["another origin", { origin: "http://app.test:9999" }, 403],
    ["no Origin and no Sec-Fetch-Site", { origin: "" }, 403],
    ["a form post from the right origin", { "content-type": "application/x-www-form-urlencoded" }, 403],
  ])("%s: refused, no session made", async (_label, headers, status) => {
    const before = await sessionRows();
    const form = "content-type" in headers;
    const res = await signInRequest(signInRequestFrom(newAddress(), form ? `password=${PASSWORD}` : { password: PASSWORD }, headers));
    expect(res.status).toBe(status);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await sessionRows()).toBe(before);
  });

  it("an unknown field is a 400 naming it", async () => {
    const res = await signInRequest(signInRequestFrom(newAddress(), { password: PASSWORD, remember: true }));
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('"field":"remember"');
  });

  it(`after ${SIGN_IN_LIMITS.perAddress} failures from one address: 429 with Retry-After, even for the right password`, async () => {
    const address = newAddress();
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress; i++) {
      expect((await signInRequest(signInRequestFrom(address, { password: `wrong-${i}` }))).status).toBe(401);
    }
    const throttled = await signInRequest(signInRequestFrom(address, { password: PASSWORD }));
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(throttled.headers.get("retry-after"))).toBeLessThanOrEqual(SIGN_IN_LIMITS.windowSeconds);
    expect(await throttled.json()).toMatchObject({ status: 429, type: "/problems/too-many-sign-ins" });
    expect(throttled.headers.get("set-cookie")).toBeNull();
    // Another address is not affected by this one's bucket.
    expect((await signInRequest(signInRequestFrom(newAddress(), { password: PASSWORD }))).status).toBe(200);
  });

  it("the overall limit holds across addresses", async () => {
    const throttle = createSignInThrottle({ perAddress: 10, overall: 3, windowSeconds: 60 }, `test-overall-${randomUUID()}`);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await signInRequest(signInRequestFrom(newAddress(), { password: "wrong" }), throttle)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });

  it("parallel guesses from two instances share one count: exactly the limit gets through, every round", async () => {
    for (let round = 0; round < 3; round++) {
      const prefix = `test-parallel-${randomUUID()}`;
      const limits = { perAddress: 5, overall: 1000, windowSeconds: 60 };
      // Two throttles on the same table and prefix: two app instances.
      const instances = [createSignInThrottle(limits, prefix), createSignInThrottle(limits, prefix)];
      const address = newAddress();
      const arrive = barrier(20);
      const verdicts = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await arrive();
          return instances[i % 2]!.attempt(address);
        }),
      );
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(5);
    }
  });

  it("a correct password gives its attempt back: only failures add up", async () => {
    const throttle = createSignInThrottle({ perAddress: 3, overall: 1000, windowSeconds: 60 }, `test-reward-${randomUUID()}`);
    const address = newAddress();
    const attempt = async (password: string) => (await signInRequest(signInRequestFrom(address, { password }), throttle)).status;
    expect([await attempt("wrong"), await attempt("wrong"), await attempt(PASSWORD), await attempt("wrong"), await attempt("wrong")]).toEqual([401, 401, 200, 401, 429]);
  });
});

describe("sign-out", () => {
  async function signedIn() {
    return cookieOf(await signInRequest(signInRequestFrom(newAddress(), { password: PASSWORD })));
  }
  const signOut = (cookie: string, headers: Record<string, string> = SAME_ORIGIN) => signOutRequest(new Request("http://app.test/admin/session", { method: "DELETE", headers: { ...headers, cookie } }));

  it("revokes the session: a copy of the cookie is refused afterwards", async () => {
    const cookie = await signedIn();
    const copy = await callerWith({ cookie });
    await expect(copy.admin.keys.counts({})).resolves.toBeDefined();
    const res = await signOut(cookie);
    expect(res.status).toBe(204);
    expect(res.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await trpcError(copy.admin.keys.counts({}))).code).toBe("UNAUTHORIZED");
    expect((await trpcError((await callerWith({ cookie })).admin.keys.purgeExpired({}))).code).toBe("UNAUTHORIZED");
  });

  it("from another origin: 403 and the session stays", async () => {
    const cookie = await signedIn();
    expect((await signOut(cookie, { host: "app.test", origin: "http://app.test:9999" })).status).toBe(403);
    await expect((await callerWith({ cookie })).admin.keys.counts({})).resolves.toBeDefined();
  });
});
