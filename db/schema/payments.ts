/** Payments, refunds, accounts, coupons, orders, webhook events. Money in integer minor units. */
import { sql } from "drizzle-orm";
import { bigint, bigserial, boolean, check, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });
const money = (name: string) => bigint(name, { mode: "number" });

export const PaymentStatus = {
  Pending: "pending",
  Succeeded: "succeeded",
  RequiresCapture: "requires_capture",
  Canceled: "canceled",
  Failed: "failed",
} as const;
export type PaymentStatus = (typeof PaymentStatus)[keyof typeof PaymentStatus];

export const payments = pgTable(
  "payments",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    status: text("status").$type<PaymentStatus>().notNull(),
    amountMinor: money("amount_minor").notNull(),
    currency: text("currency").notNull(),
    destination: text("destination").notNull(),
    capture: text("capture_method").$type<"automatic" | "manual">().notNull(),
    amountCapturedMinor: money("amount_captured_minor").notNull().default(0),
    amountRefundedMinor: money("amount_refunded_minor").notNull().default(0),
    pspChargeId: text("psp_charge_id"),
    failureReason: text("failure_reason"),
    /**
     * A capture or void that has been decided but not yet confirmed by the
     * provider. Claimed with a conditional UPDATE, so capture and void of one
     * payment can never both proceed.
     */
    pendingAction: text("pending_action").$type<"capture" | "void">(),
    idempotencyKey: text("idempotency_key"),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
    updatedAt: ts("updated_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index("payments_tenant_created_idx").on(t.tenantId, t.createdAt, t.id),
    check("payments_refund_le_captured", sql`${t.amountRefundedMinor} <= ${t.amountCapturedMinor}`),
    check("payments_captured_le_amount", sql`${t.amountCapturedMinor} <= ${t.amountMinor}`),
  ],
);

export const refunds = pgTable(
  "refunds",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    paymentId: text("payment_id")
      .notNull()
      .references(() => payments.id),
    amountMinor: money("amount_minor").notNull(),
    currency: text("currency").notNull(),
    /**
     * "pending" while the provider has not confirmed it (its amount already
     * counts against the limit); "failed" when the provider refused it and the
     * reservation was given back.
     */
    status: text("status").$type<"pending" | "succeeded" | "failed">().notNull().default("succeeded"),
    pspRefundId: text("psp_refund_id"),
    idempotencyKey: text("idempotency_key"),
    eventId: text("event_id"),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [index("refunds_payment_idx").on(t.paymentId)],
);

export const accounts = pgTable(
  "accounts",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    currency: text("currency").notNull(),
    balanceMinor: money("balance_minor").notNull().default(0),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [check("accounts_balance_not_negative", sql`${t.balanceMinor} >= 0`)],
);

export const coupons = pgTable(
  "coupons",
  {
    tenantId: text("tenant_id").notNull(),
    code: text("code").notNull(),
    percentOff: integer("percent_off").notNull(),
    redeemedOrderId: text("redeemed_order_id"),
    redeemedAt: ts("redeemed_at"),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.code] }), check("coupons_percent_range", sql`${t.percentOff} between 1 and 100`)],
);

export type OrderItem = { sku: string; name: string; quantity: number; unitPriceMinor: number };

export const orders = pgTable(
  "orders",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    status: text("status").notNull(),
    items: jsonb("items").$type<OrderItem[]>().notNull(),
    subtotalMinor: money("subtotal_minor").notNull(),
    discountMinor: money("discount_minor").notNull().default(0),
    totalMinor: money("total_minor").notNull(),
    currency: text("currency").notNull(),
    couponCode: text("coupon_code"),
    paymentId: text("payment_id").references(() => payments.id),
    idempotencyKey: text("idempotency_key"),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [index("orders_tenant_created_idx").on(t.tenantId, t.createdAt)],
);

export const MovementType = { Deposit: "deposit", Withdrawal: "withdrawal" } as const;
export type MovementType = (typeof MovementType)[keyof typeof MovementType];

/**
 * A deposit or a withdrawal, written in the same transaction as the balance
 * change and the ledger entries, so the id the client was answered names a
 * record it can read back. `balanceAfterMinor` is the balance this movement
 * left, as the answer showed it.
 */
export const accountMovements = pgTable(
  "account_movements",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    type: text("type").$type<MovementType>().notNull(),
    amountMinor: money("amount_minor").notNull(),
    currency: text("currency").notNull(),
    balanceAfterMinor: money("balance_after_minor").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index("account_movements_account_idx").on(t.tenantId, t.accountId, t.createdAt, t.id),
    check("account_movements_amount_positive", sql`${t.amountMinor} > 0`),
  ],
);

/**
 * Every call this app made to the provider for a payment's charge, from
 * whichever instance made it: a flaky provider's failed first attempt is
 * invisible in the payment itself (the retry with the same downstream key
 * succeeds), so the confirmation page reads the attempts from here.
 */
export const chargeAttempts = pgTable(
  "charge_attempts",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    paymentId: text("payment_id")
      .notNull()
      .references(() => payments.id),
    /** The provider's HTTP status; null when no answer came (`error` says why). */
    status: integer("status"),
    error: text("error"),
    replayed: boolean("replayed").notNull(),
    elapsedMs: integer("elapsed_ms").notNull(),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`clock_timestamp()`),
  },
  (t) => [index("charge_attempts_payment_idx").on(t.paymentId, t.id)],
);

/** A provider event, once: the primary key is the provider's event id. */
export const webhookEvents = pgTable("webhook_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  payload: jsonb("payload").notNull(),
  tenantId: text("tenant_id"),
  paymentId: text("payment_id"),
  /** Set when the event could not be applied as is (unknown payment, over-refund): reconciliation lists it. */
  flag: text("flag"),
  receivedAt: ts("received_at")
    .notNull()
    .default(sql`now()`),
});

/**
 * The double-entry ledger. Every money movement is one `transaction_id`
 * whose entries balance (debits = credits), written in the same database
 * transaction as the business change, tagged with what caused it.
 */
export const ledgerEntries = pgTable(
  "ledger_entries",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    transactionId: text("transaction_id").notNull(),
    /** The book account, e.g. "psp_clearing", "sales", "customer_balance:acct_…". */
    ledgerAccount: text("ledger_account").notNull(),
    direction: text("direction").$type<"debit" | "credit">().notNull(),
    amountMinor: money("amount_minor").notNull(),
    currency: text("currency").notNull(),
    idempotencyKey: text("idempotency_key"),
    eventId: text("event_id"),
    paymentId: text("payment_id"),
    accountId: text("account_id"),
    orderId: text("order_id"),
    createdAt: ts("created_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index("ledger_tenant_key_idx").on(t.tenantId, t.idempotencyKey),
    index("ledger_event_idx").on(t.eventId),
    index("ledger_payment_idx").on(t.paymentId),
    check("ledger_amount_positive", sql`${t.amountMinor} > 0`),
    check("ledger_cause", sql`(${t.idempotencyKey} is null) <> (${t.eventId} is null)`),
  ],
);
