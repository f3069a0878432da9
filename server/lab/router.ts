/**
 * The failure lab's procedures, demo mode only (`enabled`, as the
 * composition root says): every one of them answers 404 while it is off, as
 * if it did not exist. `start` opens a run
 * (and arms the scenario's simulations for it), the twin pays and receives
 * webhooks without idempotency, `deliverWebhookTwice` has the provider send
 * one event twice at once, and `report` counts what the run really did.
 */
import { eq } from "drizzle-orm";
import { z } from "zod";
import type { Sql } from "postgres";
import { DEMO_TENANT } from "../../db/seed";
import { payments } from "../../db/schema";
import { DomainError, toTRPCError } from "../errors";
import { strictInput } from "../input";
import { amountSchema, formatMinor } from "../money";
import { destinationSchema } from "../payments/present";
import { publicProcedure, router } from "../trpc";
import { attentionOf, completeUntilAttention } from "./attention";
import { bringProviderBack } from "./faults";
import { naivePay, naiveWebhook } from "./naive";
import { countRun, paymentIdsOf } from "./report";
import { CONTROL_SIGNATURE_HEADER, signWebhook } from "../psp/stand-in";
import { checkSignature } from "../webhooks/signature";
import { webhookReceivers } from "../webhooks/receivers";
import { createRun, currentRun, findRun, Lane, naivePaymentIdsOf, recordStep, stepsOf, type LabRun } from "./runs";
import { LAB_SCENARIOS, labKeyOf, LabTarget, scenarioById } from "./scenarios";

const notFound = () => toTRPCError(new DomainError("not-found", 404, "There is no such procedure."));

const runInput = strictInput({ runId: z.string().regex(/^[A-Za-z0-9]{1,32}$/) });

async function runOf(sql: Sql, id: string): Promise<LabRun> {
  const run = await findRun(sql, id);
  if (!run) throw toTRPCError(new DomainError("not-found", 404, `No lab run ${id}.`));
  return run;
}

const eventIdOf = (run: LabRun) => `evt_lab_${run.id}`;

type LabRouterOptions = {
  /** Demo mode: off, every procedure answers 404. */
  enabled: boolean;
  /** Where this server listens, so the provider's webhook comes back to this instance. */
  port: number;
  pspUrl: () => string;
  /** LAB_RUNS_PER_MINUTE: runs started per minute across instances (anyone may start one). */
  runsPerMinute: number;
};

export function createLabRouter({ enabled, port, pspUrl, runsPerMinute }: LabRouterOptions) {
  /** Exists only in demo mode: the lab's switches and its unprotected twin are never reachable elsewhere. */
  const demoProcedure = publicProcedure.use(({ next }) => {
    if (!enabled) throw notFound();
    return next({ ctx: { tenantId: DEMO_TENANT.id } });
  });

  return router({
    start: demoProcedure
      .input(
        strictInput({
          scenario: z.enum(LAB_SCENARIOS.map((s) => s.id) as [string, ...string[]]),
          target: z.enum([LabTarget.Protected, LabTarget.Naive]),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        const run = await createRun(ctx.pool, scenarioById(input.scenario)!, input.target, { perMinute: runsPerMinute });
        return { runId: run.id, key: labKeyOf(run.id), destination: run.scenario.destination };
      }),

    /** The checkout without a key. Only inside a lab run (the Lab-Run header), so it is never a general way to pay. */
    naivePay: demoProcedure
      .input(
        strictInput({
          items: z
            .array(z.strictObject({ sku: z.string().min(1).max(64), quantity: z.number().int().min(1).max(99) }))
            .min(1)
            .max(50),
          destination: destinationSchema,
        }),
      )
      .mutation(({ ctx, input }) => {
        const run = currentRun();
        if (!run || run.target !== LabTarget.Naive) throw notFound();
        return naivePay(ctx, run, ctx.tenantId, input);
      }),

    /**
     * The twin's webhook receiver: signed by the provider like the real one, it
     * takes only the events of a naive lab run about that run's own payments,
     * and applies each delivery.
     */
    naiveWebhook: demoProcedure
      .use(({ ctx, next }) => {
        checkSignature(ctx);
        return next();
      })
      .input(
        z.object({
          id: z.string().regex(/^evt_lab_[A-Za-z0-9]{1,32}$/),
          type: z.literal("charge.refunded"),
          data: z.object({ paymentId: z.string().max(64), amount: amountSchema }),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        const run = await findRun(ctx.sql, input.id.slice("evt_lab_".length));
        if (!run || run.target !== LabTarget.Naive || !(await naivePaymentIdsOf(run)).includes(input.data.paymentId)) throw notFound();
        await naiveWebhook(ctx, { id: input.id, paymentId: input.data.paymentId, amount: input.data.amount });
        recordStep(
          Lane.Provider,
          Lane.App,
          {
            plain: "the shop applies the refund notice (the twin keeps no record of notices)",
            technical: `webhook ${input.id} applied (the twin keeps no record of events)`,
          },
          run,
        );
        return { received: true as const };
      }),

    /** Refunds a quarter of the run's payment at the provider, then has the provider deliver the refund event twice at once. */
    deliverWebhookTwice: demoProcedure.input(runInput).mutation(async ({ ctx, input }) => {
      const run = await runOf(ctx.sql, input.runId);
      const [paymentId] = await paymentIdsOf(ctx.db, run, ctx.tenantId);
      const [payment] = paymentId ? await ctx.db.select().from(payments).where(eq(payments.id, paymentId)) : [];
      if (!payment?.pspChargeId) throw toTRPCError(new DomainError("lab-no-payment", 409, "The run has no charged payment to refund yet."));
      const amount = Math.max(1, Math.floor(payment.amountMinor / 4));
      const refund = await ctx.psp.refund(payment.pspChargeId, amount, `lab-refund-${run.id}`);
      if (refund.kind !== "ok") throw toTRPCError(new DomainError("lab-refund-failed", 502, "The provider did not refund."));
      recordStep(Lane.App, Lane.Provider, `refund ${formatMinor(amount)} ${payment.currency} at the provider`, run);
      const receivers = webhookReceivers(`http://127.0.0.1:${port}`);
      const url = run.target === LabTarget.Naive ? receivers.twin : receivers.provider;
      const event = { id: eventIdOf(run), type: "charge.refunded", data: { paymentId: payment.id, amount: formatMinor(amount) } };
      const body = JSON.stringify({ url, event });
      const deliver = async (n: number) => {
        recordStep(
          Lane.Provider,
          Lane.App,
          { plain: `the provider sends its refund notice (delivery ${n})`, technical: `webhook ${event.id} delivery ${n} sent` },
          run,
        );
        // The stand-in's control route takes only requests signed with the shared secret.
        const res = await fetch(`${pspUrl()}/webhooks/send`, {
          method: "POST",
          headers: { "content-type": "application/json", [CONTROL_SIGNATURE_HEADER]: signWebhook(body, ctx.webhookSecret) },
          body,
        });
        const answer = (await res.json()) as { status?: number };
        const status = answer.status ?? res.status;
        recordStep(
          Lane.App,
          Lane.Provider,
          { plain: `the shop confirms delivery ${n} (${status})`, technical: `webhook delivery ${n} answered ${status}` },
          run,
        );
      };
      await Promise.all([deliver(1), deliver(2)]);
      return { eventId: event.id, deliveries: 2 };
    }),

    /** Provider down for good: the completer's rounds for the run's key, on the lab's budget, until the key needs attention. */
    untilAttention: demoProcedure
      .input(runInput)
      .mutation(async ({ ctx, input }) => completeUntilAttention(ctx, await runOf(ctx.sql, input.runId), ctx.tenantId)),

    providerBack: demoProcedure
      .input(runInput)
      .mutation(async ({ ctx, input }) => ({ wasDown: await bringProviderBack(await runOf(ctx.sql, input.runId)) })),

    report: demoProcedure.input(runInput).query(async ({ ctx, input }) => {
      const run = await runOf(ctx.sql, input.runId);
      const key = run.target === LabTarget.Protected ? labKeyOf(run.id) : null;
      return {
        scenario: run.scenario.id,
        target: run.target,
        tenantId: ctx.tenantId,
        key,
        attention: key ? await attentionOf(ctx.sql, run, ctx.tenantId) : null,
        counts: await countRun(ctx, run, ctx.tenantId),
        steps: await stepsOf(run),
      };
    }),
  });
}
