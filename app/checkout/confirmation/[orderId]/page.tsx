import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { storefrontCaller } from "@/server/caller";
import { AttemptsPanel } from "../../_components/attempts-panel";
import { ProviderCalls } from "../../_components/provider-calls";

export const metadata: Metadata = { title: "Order confirmed" };
export const dynamic = "force-dynamic";

export default async function ConfirmationPage({
  params,
  searchParams,
}: {
  params: Promise<{ orderId: string }>;
  searchParams: Promise<{ key?: string }>;
}) {
  const { orderId } = await params;
  const { key } = await searchParams;
  const caller = await storefrontCaller();
  if (!caller) notFound();
  const order = await caller.checkout.order({ id: orderId }).catch(() => undefined);
  if (!order) notFound();
  const attempts = order.payment ? (await caller.payments.attempts({ id: order.payment.id })).data : [];
  return (
    <div className="stack">
      <section className="card confirmed">
        <h1>Order confirmed</h1>
        <dl className="facts">
          <dt>Order</dt>
          <dd>
            <code>{order.id}</code>
          </dd>
          <dt>Payment</dt>
          <dd>
            <code>{order.payment?.id ?? "none (fully discounted)"}</code> {order.payment ? `(${order.payment.status})` : ""}
          </dd>
          <dt>Amount</dt>
          <dd>
            {order.total} {order.currency}
            {order.couponCode ? ` (coupon ${order.couponCode}, −${order.discount})` : ""}
          </dd>
        </dl>
        <table className="table" aria-label="Items">
          <tbody>
            {order.items.map((i) => (
              <tr key={i.sku}>
                <td>{i.name}</td>
                <td>× {i.quantity}</td>
                <td className="num">{i.amount}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p>
          <a href="/checkout">Back to the shop</a>
        </p>
      </section>
      <ProviderCalls calls={attempts} />
      {key && <AttemptsPanel idempotencyKey={key} />}
    </div>
  );
}
