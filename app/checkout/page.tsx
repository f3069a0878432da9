import type { Metadata } from "next";
import { demoCaller } from "@/server/caller";
import { Checkout } from "./_components/checkout";

export const metadata: Metadata = { title: "Checkout" };
export const dynamic = "force-dynamic";

export default async function CheckoutPage() {
  const { data: products } = await (await demoCaller()).checkout.catalog();
  return (
    <div className="stack">
      <section>
        <h1>Checkout</h1>
        <p className="lead">
          Double-click Pay, reload mid-payment, pick a slow or flaky provider: the order is placed and charged exactly once. Each
          attempt carries the same <code>Idempotency-Key</code>; the panel below shows them.
        </p>
      </section>
      <Checkout products={products} />
    </div>
  );
}
