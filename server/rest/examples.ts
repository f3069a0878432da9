/**
 * One example request and answer per REST operation, keyed by procedure, for
 * the OpenAPI document. Each is checked against the procedure's own input and
 * output schemas (tests/contract/document.test.ts) and by Redocly's lint, so
 * an example cannot drift from what the API takes and gives.
 */
const payment = {
  id: "pay_01JD6Y4M2Q8ZK3",
  status: "succeeded",
  amount: "25.00",
  currency: "EUR",
  destination: "acct_test_123",
  captureMethod: "automatic",
  amountCaptured: "25.00",
  amountRefunded: "0.00",
  failureReason: null,
  createdAt: "2026-12-01T21:30:00.000Z",
};
const authorized = { ...payment, status: "requires_capture", captureMethod: "manual", amountCaptured: "0.00" };
const account = { id: "acct_01JD6Y5A7C", balance: "20.00", currency: "EUR", createdAt: "2026-12-01T21:30:00.000Z" };
const deposit = { id: "dep_01JD6Y5F2R", type: "deposit", accountId: account.id, amount: "20.00", currency: "EUR", balance: "20.00" };
const order = {
  id: "ord_01JD6Y6B9T",
  status: "paid",
  items: [{ sku: "mug-once", name: "Mug “Exactly once”", quantity: 2, unitPrice: "15.00", amount: "30.00" }],
  subtotal: "30.00",
  discount: "3.00",
  total: "27.00",
  currency: "EUR",
  couponCode: "WELCOME10",
  payment: { ...payment, amount: "27.00", amountCaptured: "27.00", destination: "acct_demo_shop" },
  createdAt: "2026-12-01T21:30:00.000Z",
};

export type OperationExample = { request?: Record<string, unknown>; response: unknown };

export const EXAMPLES: Record<string, OperationExample> = {
  "catalog.list": {
    response: {
      data: [
        {
          sku: "mug-once",
          name: "Mug “Exactly once”",
          description: "Holds one coffee. Refills are idempotent.",
          price: "15.00",
          currency: "EUR",
        },
      ],
    },
  },
  "payments.create": { request: { amount: "25.00", currency: "EUR", destination: "acct_test_123", capture: true }, response: payment },
  "payments.get": { request: { id: payment.id }, response: payment },
  "payments.list": { request: { limit: 10 }, response: { data: [payment] } },
  "payments.attempts": { request: { id: payment.id }, response: { data: [{ status: 200, error: null, replayed: false, ms: 41 }] } },
  "payments.capture": { request: { id: payment.id }, response: { ...authorized, status: "succeeded", amountCaptured: "25.00" } },
  "payments.void": { request: { id: payment.id }, response: { ...authorized, status: "canceled" } },
  "payments.refund": {
    request: { id: payment.id, amount: "5.00" },
    response: {
      id: "re_01JD6Y7K3W",
      paymentId: payment.id,
      amount: "5.00",
      currency: "EUR",
      status: "succeeded",
      createdAt: "2026-12-01T21:31:00.000Z",
    },
  },
  "accounts.create": { request: { currency: "EUR" }, response: { ...account, balance: "0.00" } },
  "accounts.get": { request: { id: account.id }, response: account },
  "accounts.deposit": { request: { id: account.id, amount: "20.00", currency: "EUR" }, response: deposit },
  "accounts.withdraw": {
    request: { id: account.id, amount: "5.00", currency: "EUR" },
    response: { ...deposit, id: "wd_01JD6Y5K8M", type: "withdrawal", amount: "5.00", balance: "15.00" },
  },
  "accounts.movements": { request: { id: account.id, limit: 10 }, response: { data: [deposit] } },
  "accounts.getDeposit": { request: { id: deposit.id }, response: deposit },
  "accounts.getWithdrawal": {
    request: { id: "wd_01JD6Y5K8M" },
    response: { ...deposit, id: "wd_01JD6Y5K8M", type: "withdrawal", amount: "5.00", balance: "15.00" },
  },
  "coupons.create": { request: { code: "WELCOME10", percentOff: 10 }, response: { code: "WELCOME10", percentOff: 10, redeemed: false } },
  "orders.create": { request: { items: [{ sku: "mug-once", quantity: 2 }], couponCode: "WELCOME10" }, response: order },
  "orders.get": { request: { id: order.id }, response: order },
  "ledger.list": {
    request: { idempotencyKey: "5f0c1e58-8d8e-4f7c-9a51-2b9d3c1f7a10" },
    response: {
      data: [
        {
          id: "le_01JD6Y8A1B",
          transactionId: "tx_01JD6Y8A1A",
          account: "customer_funds",
          amount: "25.00",
          currency: "EUR",
          direction: "debit",
          idempotencyKey: "5f0c1e58-8d8e-4f7c-9a51-2b9d3c1f7a10",
          eventId: null,
          paymentId: payment.id,
          accountId: null,
          orderId: null,
          createdAt: "2026-12-01T21:30:00.000Z",
        },
      ],
    },
  },
  "webhooks.psp": {
    request: { id: "evt_01JD6Y9C2D", type: "charge.refunded", data: { paymentId: payment.id, amount: "5.00" } },
    response: { received: true, duplicate: false },
  },
};
