/**
 * Where a payment really stands, the one definition the dashboard shows.
 *
 * A payment the app recorded as charged, declined or canceled is what it
 * says. A pending one is the open case: the worker may have stopped after
 * the provider charged and before it recorded the charge (a crash), or
 * before the call ever reached the provider. Only the provider knows, so a
 * pending payment is looked up there by the downstream key its charge was
 * sent with, and an unreachable provider is said to be unreachable, never
 * guessed at.
 */
import { PaymentStatus } from "../../db/schema";
import type { KeyLookupResult } from "../psp/client";
import { chargeSchema } from "../psp/schemas";

export const Standing = {
  Charged: "charged",
  Authorised: "authorised",
  Declined: "declined",
  Canceled: "canceled",
  /** The provider charged under the payment's key; the app has not recorded it yet. */
  ChargedUnrecorded: "charged_unrecorded",
  /** The provider has nothing under the key: the charge never reached it (or failed with a 5xx, which charges nothing). */
  NotCharged: "not_charged",
  /** The provider is still working on the first request with the key. */
  AtProvider: "at_provider",
  ProviderUnreachable: "provider_unreachable",
} as const;
export type Standing = (typeof Standing)[keyof typeof Standing];

const LABELS: Record<Standing, { label: string; detail: string }> = {
  charged: { label: "charged", detail: "charged and recorded" },
  authorised: { label: "authorised, not captured", detail: "authorised at the provider and recorded; not captured yet" },
  declined: { label: "declined", detail: "declined by the provider: no charge" },
  canceled: { label: "canceled", detail: "canceled: no charge" },
  charged_unrecorded: {
    label: "charged at the provider, not recorded yet",
    detail:
      "the provider charged under this key; the completer or a retry with this key will record it (the provider replays the same charge)",
  },
  not_charged: { label: "not charged", detail: "the provider has no charge under this key; a retry or the completer will charge once" },
  at_provider: { label: "charging at the provider", detail: "the provider is still answering the request made with this key" },
  provider_unreachable: { label: "provider unreachable", detail: "the provider could not be asked; whether it charged is unknown" },
};

export type PaymentStanding = { standing: Standing; label: string; detail: string };

const of = (standing: Standing): PaymentStanding => ({ standing, ...LABELS[standing] });

/** A payment whose outcome only the provider can tell. */
export const isOpen = (p: { status: string; pspChargeId: string | null }) => p.status === PaymentStatus.Pending && p.pspChargeId === null;

/**
 * `provider` is the lookup of the payment's downstream key, needed only when
 * the payment is open (`isOpen`); a recorded outcome is taken as recorded.
 */
export function standingOf(p: { id: string; status: string; pspChargeId: string | null }, provider?: KeyLookupResult): PaymentStanding {
  if (p.pspChargeId)
    return of(
      p.status === PaymentStatus.RequiresCapture
        ? Standing.Authorised
        : p.status === PaymentStatus.Canceled
          ? Standing.Canceled
          : Standing.Charged,
    );
  if (p.status === PaymentStatus.Failed) return of(Standing.Declined);
  if (p.status === PaymentStatus.Canceled) return of(Standing.Canceled);
  if (!provider || provider.kind !== "ok") return of(Standing.ProviderUnreachable);
  const found = provider.found;
  if (!found) return of(Standing.NotCharged);
  if (found.state === "in_flight") return of(Standing.AtProvider);
  if (found.status === 402) return of(Standing.Declined);
  const charge = chargeSchema.safeParse(found.body);
  // The key is the payment's own (tenant, key and generation), and the app sends the payment id as the charge's reference.
  if (found.status < 300 && charge.success && charge.data.reference === p.id) return of(Standing.ChargedUnrecorded);
  return of(Standing.NotCharged);
}
