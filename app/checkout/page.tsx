import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { storefrontCaller } from "@/server/caller";
import { Checkout } from "./_components/checkout";

export const metadata: Metadata = { title: "Checkout" };
export const dynamic = "force-dynamic";

export default async function CheckoutPage() {
  // Outside demo mode the storefront is off unless a deployment names its tenant (server/caller.ts).
  const caller = await storefrontCaller();
  if (!caller) notFound();
  const catalog = await caller.checkout.catalog();
  const products = catalog.data;
  return (
    <div className="stack">
      <section>
        <h1>Checkout</h1>
        <p className="lead">
          Double-click Pay, reload mid-payment, pick a slow or flaky provider: the order is placed and charged exactly once. Each attempt
          carries the same <code>Idempotency-Key</code>; the panel below shows them.
        </p>
      </section>
      <Checkout products={products} />
    </div>
  );
}
