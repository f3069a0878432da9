/**
 * The package's completer wired to this app: it finishes the registry's
 * resumable procedures (built with `{ resumable: true }` and one input
 * schema) by running them again through a server-side caller, as the key's
 * tenant. The stored canonical request is encoded back to its wire form
 * (amounts in minor units become "25.00") and must parse again to exactly
 * what was stored; otherwise the schema changed since and nothing may run.
 *
 * It runs in every instance (`start`, next to the expiry sweep), once from
 * `npm run keys:complete`, and for one key from the admin's "Resume now",
 * which reaches it through the request context. The composition root
 * (server/app.ts) builds it from the procedure registry, so it imports no
 * router.
 */
import {
  canonicalJson,
  completionPolicy,
  createCompleter as createPackageCompleter,
  NotResumableError,
  type Completer as PackageCompleter,
  type DueRef,
  type IdempotencyEventSink,
  type IdempotentCall,
  type KeyCompletion,
} from "@exactly-once/trpc";
import type { Sql } from "postgres";
import { z } from "zod";
import { logger } from "../logger";
import { instrument } from "../observability";
import type { ProcedureRegistry } from "../registry";

export type { KeyCompletion, RunOptions } from "@exactly-once/trpc";

/** A caller's context for one attempt: the key's tenant, its Idempotency-Key and where the middleware's decision goes. */
type AttemptContext = IdempotentCall & { tenant: { id: string; name: string } };

export type CompleterParts<TCtx> = {
  registry: ProcedureRegistry<TCtx>;
  createContext: (options: AttemptContext) => Promise<TCtx>;
  sql: () => Sql;
  /** How often the completer looks for due keys (the settings' COMPLETER_INTERVAL_MS). */
  intervalMs: number;
  onEvent: IdempotencyEventSink;
  /** Wraps every attempt on a key (the failure lab records one on a lab run's key into that run). */
  around?: (due: DueRef, attempt: () => Promise<KeyCompletion>) => Promise<KeyCompletion>;
};

export type Completer = PackageCompleter & {
  /** The resumable procedures' paths (what the due-key query may take up). */
  resumableProcedures: () => string[];
};

/** The stored input back in the form a client sends, or NotResumableError saying why it cannot be used. */
function wireInput(schema: z.ZodType, stored: unknown): unknown {
  const issues = (error: z.ZodError) => error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ");
  const encoded = z.safeEncode(schema, stored);
  if (!encoded.success) throw new NotResumableError(`the stored request no longer parses: ${issues(encoded.error)}`);
  const decoded = schema.safeParse(encoded.data);
  if (!decoded.success) throw new NotResumableError(`the stored request no longer parses: ${issues(decoded.error)}`);
  if (canonicalJson(decoded.data) !== canonicalJson(stored))
    throw new NotResumableError("the stored request parses to a different request now");
  return encoded.data;
}

export function createCompleter<TCtx>(parts: CompleterParts<TCtx>): Completer {
  const resumables = new Map<string, z.ZodType>();
  for (const p of parts.registry.procedures) if (p.meta.resumable && p.input) resumables.set(p.path, p.input);

  const completer = createPackageCompleter({
    sql: parts.sql,
    procedures: [...resumables.keys()],
    policy: completionPolicy(parts.intervalMs),
    onEvent: parts.onEvent,
    log: logger,
    aroundKey: (due, run) => instrument.completerRun(due.procedure, () => (parts.around ? parts.around(due, run) : run())),
    rerun: async (due, call) => {
      const input = wireInput(resumables.get(due.procedure)!, due.input);
      const ctx = await parts.createContext({ tenant: { id: due.tenantId, name: due.tenantId }, ...call });
      return parts.registry.byPath(due.procedure)!.call(ctx, input);
    },
  });
  return { ...completer, resumableProcedures: () => [...resumables.keys()] };
}
