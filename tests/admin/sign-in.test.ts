/**
 * Sign-in and sign-out at /admin/session: only from the app's own origin and
 * as JSON, as a named operator; throttled per client address (a bucket) and
 * per operator (a growing wait) with 429 + Retry-After, counted in
 * PostgreSQL so that parallel guesses and other instances count too, and
 * with no shared bucket whose exhaustion locks everyone out; sign-out
 * revokes the session, so a copied cookie stops working.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { database } from "../../db/client";
import { ADMIN_COOKIE } from "../../server/admin/session";
import { signInRequest as signInWith } from "../../server/admin/sign-in";
import type { Operator } from "../../server/admin/operators";
import {
  createSignInThrottle as createThrottle,
  SIGN_IN_LIMITS,
  type SignInThrottle,
  type ThrottleLimits,
} from "../../server/admin/throttle";
import { app } from "../../server/app";
import { barrier, trpcError } from "../support/api";
import { callerWith, newOperator, OPERATOR_PASSWORD, SAME_ORIGIN } from "./support";

const PASSWORD = OPERATOR_PASSWORD;
vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

let me: Operator;
beforeAll(async () => {
  me = await newOperator();
});

/** As /admin/session answers, with the app's throttle unless a test's own is given. */
const signInRequest = (req: Request, throttle?: SignInThrottle) =>
  throttle ? signInWith(req, { db: database().db, settings: app.settings, throttle }) : app.adminSessionRoutes.signIn(req);
const signOutRequest = (req: Request) => app.adminSessionRoutes.signOut(req);
const createSignInThrottle = (limits: ThrottleLimits, prefix: string) => createThrottle(() => database().db, limits, prefix);

/** Limits for a throttle of a test's own: no operator waits unless the test wants them. */
const testLimits = (limits: Partial<ThrottleLimits>): ThrottleLimits => ({
  perAddress: 1000,
  windowSeconds: 60,
  freeFailures: 1000,
  maxDelaySeconds: 60,
  ...limits,
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
    const res = await signInRequest(
      signInRequestFrom(newAddress(), { operator: me.name, password: PASSWORD, next: "//evil.example/admin" }),
    );
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
    const res = await signInRequest(
      signInRequestFrom(newAddress(), form ? `password=${PASSWORD}` : { operator: me.name, password: PASSWORD }, headers),
    );
    expect(res.status).toBe(status);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await sessionRows()).toBe(before);
  });

  it("an unknown field is a 400 naming it", async () => {
    const res = await signInRequest(signInRequestFrom(newAddress(), { operator: me.name, password: PASSWORD, remember: true }));
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('"field":"remember"');
  });

  it("a wrong password, an unknown operator and a missing name (with operators besides the demo one) are all the same 401", async () => {
    for (const body of [
      { operator: me.name, password: "wrong" },
      { operator: "nobody-here", password: PASSWORD },
      { password: PASSWORD },
    ]) {
      const res = await signInRequest(
        signInRequestFrom(newAddress(), body),
        createSignInThrottle(testLimits({}), `test-401-${randomUUID()}`),
      );
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ status: 401, type: "/problems/sign-in-failed" });
      expect(res.headers.get("set-cookie")).toBeNull();
    }
  });

  it(`after ${SIGN_IN_LIMITS.perAddress} failures from one address: 429 with Retry-After, even for the right password`, async () => {
    const address = newAddress();
    // Each guess names another operator, so only the address's bucket fills.
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress; i++) {
      expect(
        (await signInRequest(signInRequestFrom(address, { operator: `guess-${i}-${randomUUID().slice(0, 8)}`, password: `wrong-${i}` })))
          .status,
      ).toBe(401);
    }
    const throttled = await signInRequest(signInRequestFrom(address, { operator: me.name, password: PASSWORD }));
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(throttled.headers.get("retry-after"))).toBeLessThanOrEqual(SIGN_IN_LIMITS.windowSeconds);
    expect(await throttled.json()).toMatchObject({ status: 429, type: "/problems/too-many-sign-ins" });
    expect(throttled.headers.get("set-cookie")).toBeNull();
    // Another address is not affected by this one's bucket.
    expect((await signInRequest(signInRequestFrom(newAddress(), { operator: me.name, password: PASSWORD }))).status).toBe(200);
  });

  it("an operator's failures make its next attempts wait 1 s, then 2 s: growing, whatever the address", async () => {
    const throttle = createSignInThrottle(testLimits({ freeFailures: 2, maxDelaySeconds: 8 }), `test-growing-${randomUUID()}`);
    const target = await newOperator();
    const guess = () => signInRequest(signInRequestFrom(newAddress(), { operator: target.name, password: "wrong" }), throttle);
    expect([(await guess()).status, (await guess()).status, (await guess()).status]).toEqual([401, 401, 401]);
    const first = await guess();
    expect([first.status, first.headers.get("retry-after")]).toEqual([429, "1"]);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await guess()).status).toBe(401);
    const second = await guess();
    expect([second.status, second.headers.get("retry-after")]).toEqual([429, "2"]);
  });

  it("no lock-out: a hundred wrong guesses from a hundred addresses keep the right password out for at most the cap", async () => {
    const throttle = createSignInThrottle(
      testLimits({ perAddress: 10, freeFailures: 5, maxDelaySeconds: 1 }),
      `test-lockout-${randomUUID()}`,
    );
    const target = await newOperator();
    for (let i = 0; i < 100; i++) {
      const res = await signInRequest(signInRequestFrom(newAddress(), { operator: target.name, password: `wrong-${i}` }), throttle);
      expect([401, 429]).toContain(res.status);
    }
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const res = await signInRequest(signInRequestFrom(newAddress(), { operator: target.name, password: PASSWORD }), throttle);
    expect(res.status).toBe(200);
  });

  it("parallel guesses from two instances share one count: exactly the limit gets through, every round", async () => {
    for (let round = 0; round < 3; round++) {
      const prefix = `test-parallel-${randomUUID()}`;
      const limits = testLimits({ perAddress: 5 });
      // Two throttles on the same table and prefix: two app instances.
      const instances = [createSignInThrottle(limits, prefix), createSignInThrottle(limits, prefix)];
      const address = newAddress();
      const arrive = barrier(20);
      const verdicts = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await arrive();
          return instances[i % 2]!.attempt(address, me.name);
        }),
      );
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(5);
    }
  });

  it("a correct password gives its attempt back: only failures add up", async () => {
    const throttle = createSignInThrottle(testLimits({ perAddress: 3 }), `test-reward-${randomUUID()}`);
    const address = newAddress();
    const attempt = async (password: string) =>
      (await signInRequest(signInRequestFrom(address, { operator: me.name, password }), throttle)).status;
    expect([
      await attempt("wrong"),
      await attempt("wrong"),
      await attempt(PASSWORD),
      await attempt("wrong"),
      await attempt("wrong"),
    ]).toEqual([401, 401, 200, 401, 429]);
  });
});

describe("sign-out", () => {
  async function signedIn() {
    return cookieOf(await signInRequest(signInRequestFrom(newAddress(), { operator: me.name, password: PASSWORD })));
  }
  const signOut = (cookie: string, headers: Record<string, string> = SAME_ORIGIN) =>
    signOutRequest(new Request("http://app.test/admin/session", { method: "DELETE", headers: { ...headers, cookie } }));

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

  it("revokes every session cookie it is given that verifies, not only the first", async () => {
    const [first, second] = [await signedIn(), await signedIn()];
    const token = (cookie: string) => cookie.slice(`${ADMIN_COOKIE}=`.length);
    // A junk cookie first: the first value alone does not verify, and was all sign-out looked at.
    const res = await signOut(`${ADMIN_COOKIE}=junk; ${ADMIN_COOKIE}=${token(first)}; other=1; ${ADMIN_COOKIE}=${token(second)}`);
    expect(res.status).toBe(204);
    for (const cookie of [first, second])
      expect((await trpcError((await callerWith({ cookie })).admin.keys.counts({}))).code).toBe("UNAUTHORIZED");
  });

  it("from another origin: 403 and the session stays", async () => {
    const cookie = await signedIn();
    expect((await signOut(cookie, { host: "app.test", origin: "http://app.test:9999" })).status).toBe(403);
    await expect((await callerWith({ cookie })).admin.keys.counts({})).resolves.toBeDefined();
  });
});
