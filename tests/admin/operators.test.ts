/**
 * Operator accounts: a viewer reads everything and changes nothing (403,
 * nothing audited); an operator's actions are audited under their name;
 * every operator sees and ends only their own sessions; the demo operator
 * signs in only in demo mode; `npm run operator -- add` reads the password
 * from standard input and stores only its scrypt hash.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { database } from "../../db/client";
import { authenticate, DEMO_OPERATOR, OperatorRole, type Operator } from "../../server/admin/operators";
import { DEMO_ADMIN_PASSWORD, env } from "../../server/env";
import { newTenant, type TestTenant } from "../idempotency/fixture";
import { trpcError } from "../support/api";
import { callerWith, newOperator, OPERATOR_PASSWORD, seedKeys, sessionCookie } from "./support";

vi.mock("../../server/env", async (original) => {
  const actual = await original<typeof import("../../server/env")>();
  return { ...actual, env: { ...actual.env, ADMIN_PASSWORD: "test-admin-password" } };
});

let tenant: TestTenant;
let viewer: Operator;
let operator: Operator;
beforeAll(async () => {
  tenant = await newTenant("operators");
  [viewer, operator] = await Promise.all([newOperator(OperatorRole.Viewer, "viewer"), newOperator(OperatorRole.Operator, "operator")]);
});

const auditOf = (tenantId: string) =>
  database().sql<
    { action: string; operator: string | null; session_id: string }[]
  >`select action, operator, session_id from admin_audit_log where tenant_id = ${tenantId} order by id`;

describe("the viewer role", () => {
  it("reads keys, counts, activity and the audit log, and gets 403 for every change: nothing purged, recovered or audited", async () => {
    const t = await newTenant("operators-viewer");
    await seedKeys(t.id, [
      { key: "expired", expiresInSeconds: -60 },
      { key: "stuck", state: "in_progress", leaseSeconds: -5 },
    ]);
    const c = await callerWith({ cookie: await sessionCookie(undefined, viewer) });
    expect((await c.admin.keys.list({ tenantId: t.id })).items).toHaveLength(2);
    await expect(c.admin.keys.counts({ tenantId: t.id })).resolves.toBeDefined();
    await expect(c.admin.audit.list({ tenantId: t.id })).resolves.toEqual([]);
    // One at a time, each started only when awaited: a refusal must never be left unhandled while another runs.
    const changes = [
      () => c.admin.keys.purgeExpired({ tenantId: t.id }),
      () => c.admin.keys.recover({ tenantId: t.id, key: "stuck" }),
      () => c.admin.keys.resume({ tenantId: t.id, key: "stuck" }),
    ];
    for (const change of changes) {
      const error = await trpcError(change());
      expect(error.code).toBe("FORBIDDEN");
      expect(error.cause).toMatchObject({ slug: "forbidden-role", status: 403 });
    }
    expect((await c.admin.keys.list({ tenantId: t.id })).items).toHaveLength(2);
    expect(await auditOf(t.id)).toEqual([]);
  });
});

describe("the operator role", () => {
  it("purges and recovers, and the audit log names the operator and the session", async () => {
    await seedKeys(tenant.id, [
      { key: "expired", expiresInSeconds: -60 },
      { key: "stuck", state: "in_progress", leaseSeconds: -5 },
    ]);
    const cookie = await sessionCookie(undefined, operator);
    const c = await callerWith({ cookie });
    await expect(c.admin.keys.purgeExpired({ tenantId: tenant.id })).resolves.toMatchObject({ deleted: 1 });
    await expect(c.admin.keys.recover({ tenantId: tenant.id, key: "stuck" })).resolves.toBeDefined();
    const [sessionId] = (await c.admin.sessions.list()).filter((s) => s.current).map((s) => s.id);
    expect(await auditOf(tenant.id)).toEqual([
      { action: "purge_expired", operator: operator.name, session_id: sessionId },
      { action: "recover", operator: operator.name, session_id: sessionId },
    ]);
    expect((await c.admin.audit.list({ tenantId: tenant.id })).map((e) => e.operator)).toEqual([operator.name, operator.name]);
  });
});

describe("an operator's sessions", () => {
  it("lists only their own, and ends their own but not another's", async () => {
    const [mine1, mine2, theirs] = [
      await sessionCookie(undefined, viewer),
      await sessionCookie(undefined, viewer),
      await sessionCookie(undefined, operator),
    ];
    const me = await callerWith({ cookie: mine1 });
    const them = await callerWith({ cookie: theirs });
    const listed = await me.admin.sessions.list();
    expect(listed.length).toBeGreaterThanOrEqual(2);
    expect(listed.filter((s) => s.current)).toHaveLength(1);
    const theirIds = (await them.admin.sessions.list()).map((s) => s.id);
    expect(listed.map((s) => s.id).some((id) => theirIds.includes(id))).toBe(false);

    // Another operator's session id is not mine to end.
    const theirCurrent = (await them.admin.sessions.list()).find((s) => s.current)!.id;
    expect((await trpcError(me.admin.sessions.revoke({ id: theirCurrent }))).code).toBe("NOT_FOUND");
    await expect(them.admin.keys.counts({})).resolves.toBeDefined();

    // My other session ends: its cookie no longer counts; mine still does.
    const other = (await (await callerWith({ cookie: mine2 })).admin.sessions.list()).find((s) => s.current)!.id;
    await expect(me.admin.sessions.revoke({ id: other })).resolves.toEqual({ revoked: other });
    expect((await trpcError((await callerWith({ cookie: mine2 })).admin.keys.counts({}))).code).toBe("UNAUTHORIZED");
    await expect(me.admin.keys.counts({})).resolves.toBeDefined();
  });

  it("a removed operator's sessions end at once", async () => {
    const gone = await newOperator(OperatorRole.Operator, "gone");
    const c = await callerWith({ cookie: await sessionCookie(undefined, gone) });
    await expect(c.admin.keys.counts({})).resolves.toBeDefined();
    await database().sql`delete from admin_operators where name = ${gone.name}`;
    expect((await trpcError(c.admin.keys.counts({}))).code).toBe("UNAUTHORIZED");
  });
});

describe("the demo operator", () => {
  it("exists in demo mode with the demo password, labelled demo, and does not sign in once demo mode is off", async () => {
    const demo = { ...env, ADMIN_PASSWORD: DEMO_ADMIN_PASSWORD, DEMO_MODE: true };
    const { db } = database();
    expect(await authenticate(db, demo, DEMO_OPERATOR, DEMO_ADMIN_PASSWORD)).toEqual({
      name: DEMO_OPERATOR,
      role: OperatorRole.Operator,
      demo: true,
    });
    expect(await authenticate(db, demo, DEMO_OPERATOR, "wrong-password")).toBeUndefined();
    const [row] = await database().sql<
      { demo: boolean; password_hash: string }[]
    >`select demo, password_hash from admin_operators where name = ${DEMO_OPERATOR}`;
    expect(row).toMatchObject({ demo: true });
    expect(row!.password_hash).not.toContain(DEMO_ADMIN_PASSWORD);
    expect(await authenticate(db, { ...demo, DEMO_MODE: false }, DEMO_OPERATOR, DEMO_ADMIN_PASSWORD)).toBeUndefined();
  });
});

describe("npm run operator", () => {
  const run = promisify(execFile);
  const cli = (args: string[], input: string) => {
    const child = run(process.execPath, ["--import", "tsx", "scripts/operator.ts", ...args], {
      env: { ...process.env, LOG_LEVEL: "silent", DATABASE_URL: inject("databaseUrl") },
    });
    child.child.stdin!.end(input);
    return child;
  };

  it("adds an operator from a password on standard input; they sign in with it, and a bad role or short password is refused", async () => {
    const name = `cli-${randomUUID().slice(0, 8)}`;
    const password = "a long cli password";
    const { stdout } = await cli(["add", name, "--role", "viewer"], `${password}\n`);
    expect(stdout).toBe(`Added operator ${name} (role viewer).\n`);
    expect(await authenticate(database().db, env, name, password)).toEqual({ name, role: OperatorRole.Viewer, demo: false });
    await expect(cli(["add", `${name}x`, "--role", "root"], `${password}\n`)).rejects.toMatchObject({ code: 2 });
    await expect(cli(["add", `${name}y`, "--role", "operator"], "short\n")).rejects.toMatchObject({ code: 2 });
    const blank = cli(["add", `${name}z`, "--role", "operator"], `${" ".repeat(12)}\n`);
    await expect(blank).rejects.toMatchObject({ code: 2 });
    await expect(blank).rejects.toMatchObject({ stderr: expect.stringContaining("must not be only whitespace") });
    await expect(cli(["add", name, "--role", "operator"], `${password}\n`)).rejects.toMatchObject({ code: 1 });
    expect(OPERATOR_PASSWORD).not.toBe(password);
  });
});
