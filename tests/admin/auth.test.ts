/**
 * Admin procedures answer only to a signed, unexpired admin session cookie:
 * never to anonymous calls, never to a tenant's API token (however valid),
 * never to a cookie that was tampered with, forged or has expired.
 */
import { database } from "../../db/client";
import { createHmac } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { ADMIN_COOKIE, issueSession, SESSION_TTL_MS, verifySession } from "../../server/admin/session";
import { app } from "../../server/app";
import { newTenant, type TestTenant } from "../idempotency/fixture";
import type { Operator } from "../../server/admin/operators";
import { hashPassword, passwordMatchesHash } from "../../server/admin/password";
import { callerWith, newOperator, sessionCookie } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

let tenant: TestTenant;
let operator: Operator;
beforeAll(async () => {
  tenant = await newTenant("admin-auth");
  operator = await newOperator();
});

async function rejection(call: () => Promise<unknown>) {
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return error as TRPCError;
}

/** One of each kind: a query and both mutations, each started only when awaited (no refusal left unhandled meanwhile). */
const calls = (c: Awaited<ReturnType<typeof callerWith>>) => [
  () => c.admin.keys.list({}),
  () => c.admin.keys.counts({}),
  () => c.admin.keys.activity({}),
  () => c.admin.keys.get({ tenantId: tenant.id, key: "any" }),
  () => c.admin.keys.recover({ tenantId: tenant.id, key: "any" }),
  () => c.admin.keys.purgeExpired({ tenantId: tenant.id }),
  () => c.admin.audit.list({}),
];

describe("admin procedures", () => {
  it("reject anonymous calls with UNAUTHORIZED", async () => {
    for (const call of calls(await callerWith())) {
      const error = await rejection(call);
      expect(error.code).toBe("UNAUTHORIZED");
    }
  });

  it("reject a valid tenant token, in the header or already resolved into the context", async () => {
    const bearer = await callerWith({ authorization: `Bearer ${tenant.token}` });
    const resolved = await callerWith({ authorization: `Bearer ${tenant.token}` }, { id: tenant.id, name: tenant.name });
    for (const call of [...calls(bearer), ...calls(resolved)]) expect((await rejection(call)).code).toBe("UNAUTHORIZED");
  });

  it("accept a valid session cookie, also next to other cookies", async () => {
    const c = await callerWith({ cookie: `theme=dark; ${await sessionCookie()}; other=1` });
    await expect(c.admin.keys.list({ tenantId: tenant.id })).resolves.toEqual({ items: [], nextCursor: null });
  });

  it("reject a cookie whose payload was changed, one signed with another key, and an expired one", async () => {
    const { token } = await issueSession(database().db, app.settings, operator);
    const [version, payload, signature] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as { exp: number };
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + SESSION_TTL_MS })).toString("base64url");
    const forgedBody = `${version}.${longer}`;
    const forged = `${forgedBody}.${createHmac("sha256", "not the secret").update(forgedBody).digest("base64url")}`;
    const expired = (await issueSession(database().db, app.settings, operator, Date.now() - SESSION_TTL_MS - 1000)).token;
    for (const bad of [`${version}.${longer}.${signature}`, forged, expired, `${token}x`, "v1.e30.", "garbage"]) {
      expect(await verifySession(database().db, app.settings, bad)).toBeUndefined();
      const c = await callerWith({ cookie: `${ADMIN_COOKIE}=${bad}` });
      expect((await rejection(() => c.admin.keys.list({}))).code).toBe("UNAUTHORIZED");
    }
  });

  it("answer UNAUTHORIZED with the problem type 'unauthorized'", async () => {
    const error = await rejection(async () => (await callerWith()).admin.keys.list({}));
    expect(error.cause).toMatchObject({ slug: "unauthorized", status: 401 });
  });
});

describe("an operator's password", () => {
  it("is stored as a salted scrypt hash that matches only itself", async () => {
    const password = "correct horse battery";
    const stored = await hashPassword(password);
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await hashPassword(password)).not.toBe(stored);
    expect(await passwordMatchesHash(password, stored)).toBe(true);
    for (const wrong of ["", password.slice(0, -1), `${password} `, password.toUpperCase()])
      expect(await passwordMatchesHash(wrong, stored)).toBe(false);
  });

  it("signs sessions that last eight hours", async () => {
    const now = Date.now();
    const { token, session } = await issueSession(database().db, app.settings, operator, now);
    expect(session.expiresAt - session.issuedAt).toBe(8 * 60 * 60 * 1000);
    expect(await verifySession(database().db, app.settings, token, now + SESSION_TTL_MS - 1)).toEqual(session);
    expect(await verifySession(database().db, app.settings, token, now + SESSION_TTL_MS)).toBeUndefined();
  });
});
