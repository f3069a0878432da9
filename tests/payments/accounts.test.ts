/** Accounts: deposits and withdrawals, currencies, a balance that never goes below zero. */
import { describe, expect, it } from "vitest";
import { api, ledgerFor, newKey, newTenant } from "../support/api";
import { accountBalance, expectProblem, expectRefusal, ledgerWhere } from "./support";

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
    expectProblem(await api(other).post(`/v1/accounts/${id}/withdrawals`, { amount: "1.00", currency: "EUR" }, newKey("steal")), 404, "not-found");
    expectProblem(await api(other).post(`/v1/accounts/${id}/deposits`, { amount: "1.00", currency: "EUR" }, newKey("gift")), 404, "not-found");
    expect(await accountBalance(id)).toBe(1000);
    expect(await ledgerWhere({ tenantId: other.id })).toHaveLength(0);
  });
});
