/**
 * The admin API behind `adminProcedure` (a signed session cookie): the
 * idempotency keys of every tenant, their counts and activity, one key in
 * full, and the operator actions (recover, resume, purge), each recorded in
 * the audit log.
 * Handlers take only what they use from the context.
 */
import { adminProcedure, router } from "../trpc";
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

export const adminRouter = router({
  keys: router({
    list: adminProcedure.input(listKeysInput).query(({ ctx, input }) => listKeys(ctx, input)),
    counts: adminProcedure.input(tenantScopeInput).query(({ ctx, input }) => keyCounts(ctx, input)),
    activity: adminProcedure.input(tenantScopeInput).query(({ ctx, input }) => keyActivity(ctx, input)),
    get: adminProcedure.input(keyRefInput).query(({ ctx, input }) => getKey(ctx, input)),
    recover: adminProcedure.input(keyRefInput).mutation(({ ctx, input }) => recoverKey(ctx, input)),
    resume: adminProcedure.input(keyRefInput).mutation(({ ctx, input }) => resumeKey(ctx, input)),
    purgeExpired: adminProcedure.input(tenantScopeInput).mutation(({ ctx, input }) => purgeExpired(ctx, input)),
  }),
  audit: router({
    list: adminProcedure.input(listAuditInput).query(({ ctx, input }) => listAudit(ctx, input)),
  }),
});
