/**
 * The admin API behind `adminProcedure` (a signed session cookie): the
 * idempotency keys of every tenant, their counts and activity, one key in
 * full, and the operator actions (recover, resume, purge), each recorded in
 * the audit log under the operator's name. Reads need any operator; the
 * actions need the `operator` role. Every operator lists and ends their own
 * sessions.
 * Handlers take only what they use from the context.
 */
import { z } from "zod";
import { DomainError } from "../errors";
import { strictInput } from "../input";
import { healthStrip } from "../observability/health";
import { adminProcedure, operatorProcedure, router } from "../trpc";
import { keyActivity } from "./activity.handler";
import { listAudit, listAuditInput } from "./audit";
import { keyCounts } from "./counts.handler";
import { getKey } from "./get.handler";
import { keyRefInput, tenantScopeInput } from "./key-ref.schema";
import { listKeys } from "./list.handler";
import { listKeysInput } from "./list.schema";
import { purgeExpired } from "./purge-expired.handler";
import { recoverKey } from "./recover.handler";
import { resumeKey } from "./resume.handler";
import { revokeOwnSession, sessionsOf } from "./session";

const sessionRefInput = strictInput({ id: z.string().regex(/^[0-9a-f]{32}$/) });

export const adminRouter = router({
  keys: router({
    // The dashboard's overview may lag the primary by a moment: it reads a standby when there is one.
    list: adminProcedure.input(listKeysInput).query(({ ctx, input }) => listKeys({ sql: ctx.reads }, input)),
    counts: adminProcedure.input(tenantScopeInput).query(({ ctx, input }) => keyCounts({ sql: ctx.reads }, input)),
    activity: adminProcedure.input(tenantScopeInput).query(({ ctx, input }) => keyActivity({ sql: ctx.reads }, input)),
    get: adminProcedure.input(keyRefInput).query(({ ctx, input }) => getKey(ctx, input)),
    recover: operatorProcedure.input(keyRefInput).mutation(({ ctx, input }) => recoverKey(ctx, input)),
    resume: operatorProcedure.input(keyRefInput).mutation(({ ctx, input }) => resumeKey(ctx, input)),
    purgeExpired: operatorProcedure.input(tenantScopeInput).mutation(({ ctx, input }) => purgeExpired(ctx, input)),
  }),
  sessions: router({
    /** The signed-in operator's own sessions. */
    list: adminProcedure.query(({ ctx }) => sessionsOf(ctx.db, ctx.admin)),
    /** Ends one of the operator's own sessions (any role: it is their own sign-in). */
    revoke: adminProcedure.input(sessionRefInput).mutation(async ({ ctx, input }) => {
      if (!(await revokeOwnSession(ctx.db, ctx.admin, input.id))) throw new DomainError("not-found", 404, "You have no such session.");
      return { revoked: input.id };
    }),
  }),
  /** The health strip: the metrics' own counters as rates over the last five minutes (this instance). */
  health: adminProcedure.query(({ ctx }) => healthStrip(ctx.pool)),
  audit: router({
    list: adminProcedure.input(listAuditInput).query(({ ctx, input }) => listAudit(ctx, input)),
  }),
});
