import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { storefrontCaller } from "@/server/caller";
import { app } from "@/server/app";
import { LAB_SCENARIOS } from "@/server/lab/scenarios";
import { Lab } from "./_components/lab";

export const metadata: Metadata = { title: "Failure lab" };
export const dynamic = "force-dynamic";

/** Demo mode only: without it the lab, like its procedures, does not exist. */
export default async function LabPage() {
  const caller = app.settings.DEMO_MODE ? await storefrontCaller() : undefined;
  if (!caller) notFound();
  const { data: products } = await caller.checkout.catalog();
  const product = products[0];
  if (!product) notFound();
  return (
    <div className="stack lab">
      <section>
        <h1>Failure lab</h1>
        <p className="lead">
          Pick a failure and run it on the real stack: real requests to the checkout procedure, the real middleware, database and provider
          stand-in. Each run goes once through the protected checkout and once through an <strong>unprotected twin</strong> with no
          Idempotency-Key, and counts what each really did, from the provider&apos;s records and the ledger.
        </p>
        <p className="notice small">
          Demo mode: the faults marked “simulated” are switches of this demo server, armed for one run only. The unprotected twin exists
          only here, to show what the key prevents.
        </p>
      </section>
      <Lab scenarios={[...LAB_SCENARIOS]} cart={{ items: [{ sku: product.sku, quantity: 1 }] }} productName={product.name} />
    </div>
  );
}
