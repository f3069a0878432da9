/**
 * The failure lab as a plug-in: what the composition root (server/app.ts)
 * wires when it plugs the lab in, through ports the core offers anyway —
 * the middleware's event sink, the provider client's observer, transport and
 * decorator, the ledger's observer, a runtime variant per request, and
 * wrappers at the HTTP edges and around the completer's attempts. Nothing in
 * the core imports the lab. The root plugs it in only in demo mode; there,
 * only the edges enter a lab run, and every other hook is a no-op outside one.
 * Its procedures (router.ts) are mounted in every mode and answer 404 outside demo mode.
 */
import type { DueRef, KeyCompletion } from "@exactly-once/trpc";
import type { Sql } from "postgres";
import type { ProviderPlugin } from "../payments/provider";
import { throughLab, webhookThroughLab } from "./edge";
import { crashAfterCharge, outageTransport, runtimeForRun } from "./faults";
import { traceCompleterAttempt, traceKeyEvent, traceLedgerMovement, traceProviderCall } from "./trace";

type Handler = (req: Request) => Promise<Response>;

/** `sql`: the app's pool once opened, where runs and their steps live. */
export function createLabPlugin(sql: () => Sql) {
  return {
    onKeyEvent: traceKeyEvent,
    onMovement: traceLedgerMovement,
    provider: { observe: traceProviderCall, transport: outageTransport, decorate: crashAfterCharge } satisfies ProviderPlugin,
    /** The idempotency runtime for a request: a crash run's claims its key with the crash's lease. */
    keysRuntime: runtimeForRun,
    trpcEdge: (req: Request, procedures: string[], handle: Handler) => throughLab(sql, req, procedures, handle),
    restEdge:
      (handle: Handler): Handler =>
      (req) =>
        webhookThroughLab(sql, req, handle),
    aroundCompleterAttempt: (due: DueRef, attempt: () => Promise<KeyCompletion>) => traceCompleterAttempt(sql, due.key, attempt),
  };
}
