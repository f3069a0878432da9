/** Accounts: deposits and withdrawals, currencies, a balance that never goes below zero. */
import { describe, expect, it } from "vitest";
import { database } from "../../db/client";
import { app } from "../../server/app";
import { api, ledgerFor, newKey, newTenant, trpcError, type Tenant } from "../support/api";
import { accountBalance, expectProblem, expectRefusal, ledgerWhere } from "./support";

const trpcAs = async (tenant: Tenant) => app.createCaller(await app.createContextInner({ tenant, headers: new Headers() }));

async function movementRows(accountId: string) {
  return database().sql<{ id: string; type: string; amount_minor: number; balance_after_minor: number; idempotency_key: string }[]>`
    select id, type, amount_minor::int, balance_after_minor::int, idempotency_key from account_movements where account_id = ${accountId} order by created_at, id`;
}

describe("accounts", () => {
  it("create, deposit, withdraw, get: balances and the ledger move together", async () => {
    const tenant = await newTenant("accounts");
    const created = await api(tenant).post("/v1/accounts", { currency: "EUR" }, newKey("acct"));
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^acct_/), balance: "0.00", currency: "EUR" });
    const id = created.body.id as string;
    const dk = newKey("deposit");
    const deposit = await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "100.00", currency: "EUR" }, dk);
    expect(deposit.status, deposit.text).toBe(201);
    expect(deposit.body).toMatchObject({ type: "deposit", accountId: id, amount: "100.00", balance: "100.00" });
    expect((await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "100.00", currency: "EUR" }, dk)).text).toBe(deposit.text);
    const wk = newKey("withdraw");
    const withdrawal = await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "30.00", currency: "EUR" }, wk);
    expect(withdrawal.status, withdrawal.text).toBe(201);
    expect(withdrawal.body).toMatchObject({ type: "withdrawal", amount: "30.00", balance: "70.00" });
    const got = await api(tenant).get(`/v1/accounts/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id, balance: "70.00", currency: "EUR" });
    expect(await accountBalance(id)).toBe(7000);
    const book = `customer_balance:${id}`;
    expect((await ledgerFor(tenant.id, dk)).map((e) => [e.ledger_account, e.direction, Number(e.amount_minor)])).toEqual(
      expect.arrayContaining([
        ["cash", "debit", 10000],
        [book, "credit", 10000],
      ]),
    );
    expect((await ledgerFor(tenant.id, wk)).map((e) => [e.ledger_account, e.direction, Number(e.amount_minor)])).toEqual(
      expect.arrayContaining([
        [book, "debit", 3000],
        ["cash", "credit", 3000],
      ]),
    );
    expect(await ledgerWhere({ accountId: id })).toHaveLength(4);
  });

  it("a currency mismatch and an overdraw are refused (4xx, not 409), stored and replayed; the balance is unchanged", async () => {
    const tenant = await newTenant("accounts-refused");
    const id = (await api(tenant).post("/v1/accounts", { currency: "EUR" }, newKey("acct"))).body.id as string;
    await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "50.00", currency: "EUR" }, newKey("deposit"));
    const usd = newKey("usd");
    const mismatch = await api(tenant).post(`/v1/accounts/${id}/deposits`, { amount: "5.00", currency: "USD" }, usd);
    expectRefusal(mismatch);
    expect((mismatch.body.errors as { field: string }[]).map((e) => e.field)).toContain("currency");
    const overKey = newKey("overdraw");
    const overdraw = await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "50.01", currency: "EUR" }, overKey);
    expectRefusal(overdraw);
    const replay = await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "50.01", currency: "EUR" }, overKey);
    expect(replay.status).toBe(overdraw.status);
    expect(replay.text).toBe(overdraw.text);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await accountBalance(id)).toBe(5000);
    expect((await api(tenant).get(`/v1/accounts/${id}`)).body).toMatchObject({ balance: "50.00" });
    expect([...(await ledgerFor(tenant.id, usd)), ...(await ledgerFor(tenant.id, overKey))]).toHaveLength(0);
    expect(await ledgerWhere({ accountId: id })).toHaveLength(2);
  });

  it("another tenant's account is 404 for reads and writes, and its balance is untouched", async () => {
    const [owner, other] = await Promise.all([newTenant("acct-owner"), newTenant("acct-other")]);
    const id = (await api(owner).post("/v1/accounts", { currency: "EUR" }, newKey("acct"))).body.id as string;
    await api(owner).post(`/v1/accounts/${id}/deposits`, { amount: "10.00", currency: "EUR" }, newKey("deposit"));
    expectProblem(await api(other).get(`/v1/accounts/${id}`), 404, "not-found");
    expectProblem(
      await api(other).post(`/v1/accounts/${id}/withdrawals`, { amount: "1.00", currency: "EUR" }, newKey("steal")),
      404,
      "not-found",
    );
    expectProblem(
      await api(other).post(`/v1/accounts/${id}/deposits`, { amount: "1.00", currency: "EUR" }, newKey("gift")),
      404,
      "not-found",
    );
    expect(await accountBalance(id)).toBe(1000);
    expect(await ledgerWhere({ tenantId: other.id })).toHaveLength(0);
  });

  it("deposits and withdrawals are stored once per key and read back over REST and tRPC; another tenant's are 404", async () => {
    const [owner, other] = await Promise.all([newTenant("movements"), newTenant("movements-other")]);
    const id = (await api(owner).post("/v1/accounts", { currency: "EUR" }, newKey("acct"))).body.id as string;
    const dk = newKey("deposit");
    const deposit = await api(owner).post(`/v1/accounts/${id}/deposits`, { amount: "40.00", currency: "EUR" }, dk);
    expect(deposit.status, deposit.text).toBe(201);
    expect((await api(owner).post(`/v1/accounts/${id}/deposits`, { amount: "40.00", currency: "EUR" }, dk)).text).toBe(deposit.text);
    const wk = newKey("withdraw");
    const withdrawal = await api(owner).post(`/v1/accounts/${id}/withdrawals`, { amount: "15.50", currency: "EUR" }, wk);
    expect(withdrawal.status, withdrawal.text).toBe(201);
    const depositId = deposit.body.id as string;
    const withdrawalId = withdrawal.body.id as string;

    expect(await movementRows(id)).toEqual([
      { id: depositId, type: "deposit", amount_minor: 4000, balance_after_minor: 4000, idempotency_key: dk },
      { id: withdrawalId, type: "withdrawal", amount_minor: 1550, balance_after_minor: 2450, idempotency_key: wk },
    ]);

    const gotDeposit = await api(owner).get(`/v1/deposits/${depositId}`);
    expect(gotDeposit.status, gotDeposit.text).toBe(200);
    expect(gotDeposit.body).toEqual(deposit.body);
    const gotWithdrawal = await api(owner).get(`/v1/withdrawals/${withdrawalId}`);
    expect(gotWithdrawal.status, gotWithdrawal.text).toBe(200);
    expect(gotWithdrawal.body).toEqual(withdrawal.body);
    const listed = await api(owner).get(`/v1/accounts/${id}/movements`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toEqual([withdrawal.body, deposit.body]);

    const caller = await trpcAs(owner);
    expect(await caller.accounts.getDeposit({ id: depositId })).toEqual(deposit.body);
    expect(await caller.accounts.getWithdrawal({ id: withdrawalId })).toEqual(withdrawal.body);
    expect(await caller.accounts.movements({ id, limit: 1 })).toEqual({ data: [withdrawal.body] });

    // A withdrawal is not a deposit, and another tenant sees neither.
    expectProblem(await api(owner).get(`/v1/deposits/${withdrawalId}`), 404, "not-found");
    expectProblem(await api(other).get(`/v1/deposits/${depositId}`), 404, "not-found");
    expectProblem(await api(other).get(`/v1/withdrawals/${withdrawalId}`), 404, "not-found");
    expectProblem(await api(other).get(`/v1/accounts/${id}/movements`), 404, "not-found");
    expect((await trpcError((await trpcAs(other)).accounts.getDeposit({ id: depositId }))).code).toBe("NOT_FOUND");
  });

  it("a refused withdrawal stores no movement", async () => {
    const tenant = await newTenant("movements-refused");
    const id = (await api(tenant).post("/v1/accounts", { currency: "EUR" }, newKey("acct"))).body.id as string;
    expectRefusal(await api(tenant).post(`/v1/accounts/${id}/withdrawals`, { amount: "1.00", currency: "EUR" }, newKey("overdraw")));
    expect(await movementRows(id)).toEqual([]);
  });

  it("the OpenAPI document lists the read-back of deposits and withdrawals", () => {
    const { paths } = app.openApiDocument();
    expect(paths["/v1/deposits/{id}"]).toHaveProperty("get");
    expect(paths["/v1/withdrawals/{id}"]).toHaveProperty("get");
    expect(paths["/v1/accounts/{id}/movements"]).toHaveProperty("get");
  });
});
