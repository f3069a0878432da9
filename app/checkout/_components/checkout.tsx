"use client";
/**
 * The checkout: catalog, cart, coupon, a payment scenario, Pay. Pay never
 * depends on being clicked once: every click of the same intent sends the
 * same key, and the server runs it once. A payment in flight survives a
 * reload (it resumes with its key).
 */
import { useRouter } from "next/navigation";
import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import { TRPCClientError } from "@trpc/client";
import type { Quote } from "@/server/orders/pricing";
import { createIntentStore, signatureOf } from "@exactly-once/trpc/client";
import type { Attempt } from "@exactly-once/trpc/client";
import { useAttempts } from "./use-attempts";
import { AttemptsPanel } from "./attempts-panel";
import { clearCart, notePaid, SCENARIOS, useCart, usePaidElsewhere, type Scenario } from "./cart-store";
import { checkoutClient, PAGE_LOADED_AT } from "./client";
import { NOT_CONFIRMED, shopperMessage, type Problem } from "./messages";

type Product = { sku: string; name: string; description: string; price: string; currency: string };
type PayInput = { items: { sku: string; quantity: number }[]; couponCode?: string; destination: string };

const NOTES: Partial<Record<Attempt["outcome"], (n: number) => string>> = {
  "network-error": (n) => `Connection lost — retrying safely (attempt ${n + 1})`,
  "in-progress": (n) => `Still being processed — checking again (attempt ${n + 1})`,
  "server-error": (n) => `The server had a problem — retrying safely (attempt ${n + 1})`,
};

type Result = { phase: "declined" | "refused" | "failed"; detail: string; key: string };

const RESUMING = "Resuming the payment you started before the reload, with the same key: it cannot be charged twice.";

const createStore = () => createIntentStore<PayInput>({ name: "eo-checkout", shared: localStorage, perTab: sessionStorage });
let store: ReturnType<typeof createStore> | undefined;
const intents = () => (store ??= createStore());

/** The current key and the in-flight payment's key, kept in browser storage and shared with other tabs. */
function useIntentSnapshot(): [intentKey: string, flightKey: string] {
  const text = useSyncExternalStore(
    (notify) => {
      const off = intents().subscribe(notify);
      window.addEventListener("storage", notify);
      return () => {
        off();
        window.removeEventListener("storage", notify);
      };
    },
    () => intents().snapshot(),
    () => "|",
  );
  const [intentKey = "", flightKey = ""] = text.split("|");
  return [intentKey, flightKey];
}

/**
 * The server's price of these items (server/orders/pricing.ts), or undefined
 * while it is asked for: an answer for an older cart is never shown.
 */
function useQuote(items: { sku: string; quantity: number }[]): Quote | undefined {
  const signature = JSON.stringify(items);
  const [answered, setAnswered] = useState<{ signature: string; quote: Quote }>();
  useEffect(() => {
    if (items.length === 0) return;
    let current = true;
    checkoutClient.checkout.quote.query({ items }).then(
      (quote) => current && setAnswered({ signature, quote }),
      // Offline or a server problem: the amounts stay "…" until the cart changes or the page reloads.
      () => undefined,
    );
    return () => {
      current = false;
    };
    // The signature stands for the items.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [signature]);
  return answered?.signature === signature ? answered.quote : undefined;
}

export function Checkout({ products }: { products: Product[] }) {
  const router = useRouter();
  const [cart, update] = useCart();
  const [result, setResult] = useState<Result>();
  // The payment a reload interrupted, if any: this page resumes it (below), and says so rather than "connection lost".
  const [resumedKey] = useState(() => (typeof window === "undefined" ? undefined : intents().inFlight()?.key));
  const paidElsewhere = usePaidElsewhere();
  const [intentKey, flightKey] = useIntentSnapshot();
  const attempts = useAttempts(flightKey || undefined);
  const bySku = useMemo(() => new Map(products.map((p) => [p.sku, p])), [products]);
  const lines = cart.items.flatMap((i) => {
    const product = bySku.get(i.sku);
    return product ? [{ ...i, product }] : [];
  });
  const quote = useQuote(lines.map((l) => ({ sku: l.sku, quantity: l.quantity })));

  /** One attempt of the payment (the link retries inside it); resolves to what to show, if anything. */
  async function send(input: PayInput, idempotencyKey: string): Promise<Result | undefined> {
    intents().begin(idempotencyKey, input);
    try {
      const order = await checkoutClient.checkout.pay.mutate(input, { context: { idempotencyKey } });
      intents().settle();
      notePaid(order.id, idempotencyKey);
      clearCart();
      router.push(`/checkout/confirmation/${order.id}?key=${encodeURIComponent(idempotencyKey)}`);
      return undefined;
    } catch (error) {
      intents().land();
      const problem = error instanceof TRPCClientError ? (error.data as { problem?: Problem } | undefined)?.problem : undefined;
      if (problem?.status === 402) return { phase: "declined", detail: shopperMessage(problem), key: idempotencyKey };
      if (problem && problem.status < 500) return { phase: "refused", detail: shopperMessage(problem), key: idempotencyKey };
      return { phase: "failed", key: idempotencyKey, detail: NOT_CONFIRMED };
    }
  }

  // A reload while paying: continue the same payment with the same key.
  useEffect(() => {
    const flight = intents().inFlight();
    if (flight) void send(flight.input, flight.key).then(setResult);
    // Runs once per page load by design.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const input: PayInput = {
    items: lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
    ...(cart.couponCode.trim() ? { couponCode: cart.couponCode.trim() } : {}),
    destination: SCENARIOS[cart.scenario].destination,
  };
  const intent = signatureOf(input);

  // A changed cart is a new intent: its key is minted now, before any attempt,
  // and shared with every tab that shows the same cart.
  useEffect(() => {
    if (lines.length > 0 && !intents().inFlight()) intents().keyFor(input);
    // The signature stands for the input.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [intent]);

  function pay() {
    if (lines.length === 0) return;
    setResult(undefined);
    void send(input, intents().keyFor(input)).then(setResult);
  }

  const last = attempts.filter((a) => a.at >= PAGE_LOADED_AT && a.outcome !== "sent" && a.outcome !== "joined").at(-1);
  const note = flightKey
    ? last && NOTES[last.outcome]
      ? NOTES[last.outcome]!(last.attempt)
      : flightKey === resumedKey
        ? RESUMING
        : "Paying…"
    : undefined;
  const busy = Boolean(flightKey);
  const shown = result && result.key === (flightKey || intentKey) ? result : undefined;

  const setQuantity = (sku: string, quantity: number) =>
    update((c) => ({
      ...c,
      items: quantity <= 0 ? c.items.filter((i) => i.sku !== sku) : c.items.map((i) => (i.sku === sku ? { ...i, quantity } : i)),
    }));
  const add = (sku: string) =>
    update((c) => ({
      ...c,
      items: c.items.some((i) => i.sku === sku)
        ? c.items.map((i) => (i.sku === sku ? { ...i, quantity: i.quantity + 1 } : i))
        : [...c.items, { sku, quantity: 1 }],
    }));

  return (
    <div className="checkout">
      <section aria-labelledby="products-heading" className="card">
        <h2 id="products-heading">Products</h2>
        <ul className="products">
          {products.map((p) => (
            <li key={p.sku}>
              <div>
                <div className="product-name">{p.name}</div>
                <div className="muted small">{p.description}</div>
              </div>
              <div className="buy">
                <span>
                  {p.price} {p.currency}
                </span>
                <button type="button" className="secondary" onClick={() => add(p.sku)} aria-label={`Add ${p.name} to cart`}>
                  Add
                </button>
              </div>
            </li>
          ))}
        </ul>
      </section>

      <section aria-labelledby="cart-heading" className="card">
        <h2 id="cart-heading">Cart</h2>
        {lines.length === 0 ? (
          paidElsewhere ? (
            <p role="note">
              This cart was paid in another tab:{" "}
              <a href={`/checkout/confirmation/${paidElsewhere.orderId}?key=${encodeURIComponent(paidElsewhere.key)}`}>
                see order {paidElsewhere.orderId}
              </a>
              .
            </p>
          ) : (
            <p className="muted">Your cart is empty.</p>
          )
        ) : (
          <table className="table cards" aria-label="Cart">
            <thead>
              <tr>
                <th scope="col">Item</th>
                <th scope="col">Quantity</th>
                <th scope="col" className="num">
                  Amount
                </th>
              </tr>
            </thead>
            <tbody>
              {lines.map((l) => (
                <tr key={l.sku}>
                  <td>{l.product.name}</td>
                  <td>
                    <div className="qty">
                      <button
                        type="button"
                        className="secondary"
                        onClick={() => setQuantity(l.sku, l.quantity - 1)}
                        aria-label={`Fewer ${l.product.name}`}
                      >
                        −
                      </button>
                      <span aria-label={`Quantity of ${l.product.name}`}>{l.quantity}</span>
                      <button
                        type="button"
                        className="secondary"
                        onClick={() => setQuantity(l.sku, l.quantity + 1)}
                        aria-label={`More ${l.product.name}`}
                      >
                        +
                      </button>
                      <button type="button" className="link" onClick={() => setQuantity(l.sku, 0)} aria-label={`Remove ${l.product.name}`}>
                        Remove
                      </button>
                    </div>
                  </td>
                  <td className="num" data-label="Amount">
                    {quote ? `${quote.lines.find((q) => q.sku === l.sku)?.amount} ${quote.currency}` : "…"}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <form
          className="pay-form"
          onSubmit={(e) => {
            e.preventDefault();
            pay();
          }}
        >
          <label>
            Coupon code
            <input value={cart.couponCode} onChange={(e) => update((c) => ({ ...c, couponCode: e.target.value }))} autoComplete="off" />
          </label>
          <label>
            Payment scenario
            <select value={cart.scenario} onChange={(e) => update((c) => ({ ...c, scenario: e.target.value as Scenario }))}>
              {Object.entries(SCENARIOS).map(([value, s]) => (
                <option key={value} value={value}>
                  {s.label}
                </option>
              ))}
            </select>
          </label>
          {/* Busy, not disabled: a second click is harmless (it joins the running attempt), and the attempts list shows it did. */}
          <button type="submit" disabled={lines.length === 0} aria-busy={busy} className={busy ? "busy" : undefined}>
            Pay {quote ? `${quote.subtotal} ${quote.currency}` : "…"}
            {cart.couponCode.trim() ? " (before coupon)" : ""}
            {busy ? <span className="button-note"> — paying…</span> : null}
          </button>
        </form>
        <p role="status" aria-live="polite" className={`pay-status ${note ? "paying" : (shown?.phase ?? "")}`}>
          {note ??
            (shown?.phase === "declined"
              ? `Declined: ${shown.detail} Paying again shows the same answer; change the cart or the card for a new attempt.`
              : shown?.detail)}
        </p>
      </section>

      <AttemptsPanel idempotencyKey={flightKey || intentKey || undefined} />
    </div>
  );
}
