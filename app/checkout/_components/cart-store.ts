/**
 * The cart, in localStorage so every tab of the shop sees the same one (and
 * the same checkout key with it). `useCart` re-renders on changes made here
 * or in another tab.
 */
import { useCallback, useMemo, useSyncExternalStore } from "react";

export const SCENARIOS = {
  card: { label: "Test card (charged at once)", destination: "acct_demo_shop" },
  slow: { label: "Slow provider (answers after a few seconds)", destination: "acct_test_slow" },
  error: { label: "Flaky provider (fails once, then succeeds)", destination: "acct_test_error" },
  decline: { label: "Declined card", destination: "acct_test_decline" },
} as const;
export type Scenario = keyof typeof SCENARIOS;

export type Cart = { items: { sku: string; quantity: number }[]; couponCode: string; scenario: Scenario };

const KEY = "eo-checkout:cart";
const EMPTY: Cart = { items: [], couponCode: "", scenario: "card" };
const listeners = new Set<() => void>();
let cachedRaw: string | null | undefined;
let cached: Cart = EMPTY;

function read(): Cart {
  const raw = localStorage.getItem(KEY);
  if (raw !== cachedRaw) {
    cachedRaw = raw;
    try {
      cached = raw ? { ...EMPTY, ...(JSON.parse(raw) as Partial<Cart>) } : EMPTY;
    } catch {
      cached = EMPTY;
    }
  }
  return cached;
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  const onStorage = (e: StorageEvent) => e.key === KEY && listener();
  window.addEventListener("storage", onStorage);
  return () => {
    listeners.delete(listener);
    window.removeEventListener("storage", onStorage);
  };
}

export function writeCart(cart: Cart) {
  localStorage.setItem(KEY, JSON.stringify(cart));
  for (const l of listeners) l();
}

export function clearCart() {
  writeCart(EMPTY);
}

export function useCart(): [Cart, (update: (cart: Cart) => Cart) => void] {
  const cart = useSyncExternalStore(subscribe, read, () => EMPTY);
  const update = useCallback((fn: (cart: Cart) => Cart) => writeCart(fn(read())), []);
  return [cart, update];
}

const PAID = "eo-checkout:paid";

/** The last order paid from this browser, so a tab whose cart another tab paid can say where it went. */
export function notePaid(orderId: string, key: string) {
  localStorage.setItem(PAID, JSON.stringify({ orderId, key }));
}

let paidElsewhere: string | null = null;

/** An order another tab paid while this page was open (a fresh visit shows nothing). */
export function usePaidElsewhere(): { orderId: string; key: string } | undefined {
  const raw = useSyncExternalStore(
    (notify) => {
      const onStorage = (e: StorageEvent) => {
        if (e.key !== PAID) return;
        paidElsewhere = e.newValue;
        notify();
      };
      window.addEventListener("storage", onStorage);
      return () => window.removeEventListener("storage", onStorage);
    },
    () => paidElsewhere,
    () => null,
  );
  return useMemo(() => (raw ? (JSON.parse(raw) as { orderId: string; key: string }) : undefined), [raw]);
}
