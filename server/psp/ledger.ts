/**
 * The stand-in's memory: charges, their refunds, and one stored answer per
 * downstream idempotency key; with a journal (journal.ts) also on disk.
 *
 * A key's answer is kept as a promise from the moment the first request
 * starts, so a duplicate that arrives while the first is still in flight
 * awaits the very same answer instead of charging again. Every state change
 * below happens synchronously before the first `await`, which is what makes
 * that safe on Node's single thread.
 *
 * What is stored per key: every answer except a 5xx, so declines and refusals
 * replay exactly, while a provider error leaves the key free for a retry (the
 * contract's `acct_test_error`).
 */
import { newId } from "../ids";
import type { Journal } from "./journal";
import { ChargeStatus, TestDestination, type Charge, type ChargeWithRefunds, type Refund, type chargeRequestSchema } from "./schemas";
import type { z } from "zod";

/** An answer as sent: the body is kept as text so a replay is byte-identical. */
export type Reply = { status: number; body: string; replayed?: boolean };

export const reply = (status: number, payload: unknown): Reply => ({ status, body: JSON.stringify(payload) });

export const errorReply = (status: number, type: string, message: string): Reply => reply(status, { error: { type, message } });

type ChargeRequest = z.output<typeof chargeRequestSchema>;
type StoredCharge = { charge: Charge; refunds: Refund[] };
type KeyRecord = { fingerprint: string; answer: Promise<Reply>; settled?: Reply };

/** What the provider knows of a downstream key: nothing, a request still running, or the answer it stored. */
export type KeyLookup = { state: "in_flight" } | { state: "answered"; status: number; body: unknown };

export class KeyMismatchError extends Error {
  override readonly name = "KeyMismatchError";
  constructor(readonly key: string) {
    super("This Idempotency-Key was already used with a different request.");
  }
}

export class Ledger {
  readonly #charges = new Map<string, StoredCharge>();
  readonly #keys = new Map<string, KeyRecord>();
  /** Keys whose first `acct_test_error` attempt already failed; the next one succeeds. */
  readonly #failedOnce = new Set<string>();

  /** `journal`: where every change is kept, and read back from, across restarts (journal.ts); none keeps memory only. */
  constructor(
    private readonly slowMs: number,
    private readonly journal?: Journal,
  ) {
    for (const entry of journal?.entries ?? []) {
      if (entry.kind === "charge")
        this.#charges.set(entry.charge.id, { charge: entry.charge, refunds: this.#charges.get(entry.charge.id)?.refunds ?? [] });
      if (entry.kind === "refund") this.#charges.get(entry.refund.chargeId)?.refunds.push(entry.refund);
      if (entry.kind === "key") {
        const settled: Reply = { status: entry.status, body: entry.body };
        this.#keys.set(entry.key, { fingerprint: entry.fingerprint, answer: Promise.resolve(settled), settled });
      }
    }
  }

  /**
   * Runs `work` at most once per key and fingerprint; every other caller with
   * that key gets the first caller's answer, finished or still pending.
   */
  once(key: string, fingerprint: string, work: () => Promise<Reply>): Promise<Reply> {
    const existing = this.#keys.get(key);
    if (existing) {
      if (existing.fingerprint !== fingerprint) return Promise.reject(new KeyMismatchError(key));
      return existing.answer.then((answer) => ({ ...answer, replayed: true }));
    }
    const answer = work().catch(() => errorReply(500, "provider_error", "The provider failed to process the request."));
    const record: KeyRecord = { fingerprint, answer };
    this.#keys.set(key, record);
    void answer.then((settled) => {
      record.settled = settled;
      if (settled.status >= 500) {
        if (this.#keys.get(key) === record) this.#keys.delete(key);
      } else {
        this.journal?.append({ kind: "key", key, fingerprint, status: settled.status, body: settled.body });
      }
    });
    return answer;
  }

  async charge(request: ChargeRequest, key: string): Promise<Reply> {
    if (request.destination === TestDestination.decline) {
      return errorReply(402, "card_declined", "The card was declined.");
    }
    if (request.destination === TestDestination.error && !this.#failedOnce.has(key)) {
      this.#failedOnce.add(key);
      return errorReply(500, "provider_error", "The provider failed; retry with the same Idempotency-Key.");
    }
    const charge: Charge = {
      id: newId("ch"),
      status: request.capture ? ChargeStatus.succeeded : ChargeStatus.requiresCapture,
      amount: request.amount,
      currency: request.currency,
      destination: request.destination,
      captured: request.capture,
      amountRefunded: 0,
      reference: request.reference ?? null,
      createdAt: new Date().toISOString(),
    };
    this.#charges.set(charge.id, { charge, refunds: [] });
    this.journal?.append({ kind: "charge", charge });
    // Serialised now: the answer describes the charge as it was created, even if it changes while we wait.
    const answer = reply(201, charge);
    if (request.destination === TestDestination.slow) await this.#delay();
    return answer;
  }

  async capture(chargeId: string): Promise<Reply> {
    return this.#transition(chargeId, (charge) => ({ ...charge, status: ChargeStatus.succeeded, captured: true }));
  }

  async void(chargeId: string): Promise<Reply> {
    return this.#transition(chargeId, (charge) => ({ ...charge, status: ChargeStatus.canceled }));
  }

  async refund(chargeId: string, amount: number): Promise<Reply> {
    const stored = this.#charges.get(chargeId);
    if (!stored) return notFound(chargeId);
    const { charge } = stored;
    if (!charge.captured) {
      return errorReply(400, "invalid_state", `Charge ${chargeId} is ${charge.status}; only a captured charge can be refunded.`);
    }
    if (charge.amountRefunded + amount > charge.amount) {
      const left = charge.amount - charge.amountRefunded;
      return errorReply(400, "amount_too_large", `At most ${left} of charge ${chargeId} is left to refund.`);
    }
    const refund: Refund = { id: newId("re"), chargeId, amount, createdAt: new Date().toISOString() };
    stored.refunds.push(refund);
    stored.charge = { ...charge, amountRefunded: charge.amountRefunded + amount };
    this.journal?.append({ kind: "refund", refund });
    this.journal?.append({ kind: "charge", charge: stored.charge });
    return reply(201, refund);
  }

  /** Read-only: what a key came to, so the app can tell "charged but not recorded" from "never charged" after a crash. */
  lookup(key: string): KeyLookup | undefined {
    const record = this.#keys.get(key);
    if (!record) return undefined;
    if (!record.settled) return { state: "in_flight" };
    return { state: "answered", status: record.settled.status, body: JSON.parse(record.settled.body) as unknown };
  }

  list(): ChargeWithRefunds[] {
    // Maps iterate in insertion order, which is creation order: oldest first.
    return [...this.#charges.values()].map(withRefunds);
  }

  get(chargeId: string): ChargeWithRefunds | undefined {
    const stored = this.#charges.get(chargeId);
    return stored && withRefunds(stored);
  }

  /** Capture and void both start from requires_capture only, so at most one of them ever succeeds. */
  #transition(chargeId: string, next: (charge: Charge) => Charge): Reply {
    const stored = this.#charges.get(chargeId);
    if (!stored) return notFound(chargeId);
    if (stored.charge.status !== ChargeStatus.requiresCapture) {
      return errorReply(400, "invalid_state", `Charge ${chargeId} is ${stored.charge.status}, not requires_capture.`);
    }
    stored.charge = next(stored.charge);
    this.journal?.append({ kind: "charge", charge: stored.charge });
    return reply(200, stored.charge);
  }

  #delay(): Promise<void> {
    // Unref'd: a pending slow answer must not keep a process that is shutting down alive.
    return new Promise((resolve) => setTimeout(resolve, this.slowMs).unref());
  }
}

function withRefunds({ charge, refunds }: StoredCharge): ChargeWithRefunds {
  return { ...charge, refunds: [...refunds] };
}

const notFound = (chargeId: string) => errorReply(404, "resource_missing", `No charge with id ${chargeId}.`);
