import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { demoCaller } from "@/server/caller";
import { chargeAttemptsOf } from "@/server/payments/charge-attempts";
import { AttemptsPanel } from "../../_components/attempts-panel";
import { ProviderCalls } from "../../_components/provider-calls";

export const metadata: Metadata = { title: "Order confirmed" };
export const dynamic = "force-dynamic";

export default async function ConfirmationPage({ params, searchParams }: { params: Promise<{ orderId: string }>; searchParams: Promise<{ key?: string }> }) {
  const { orderId } = await params;
  const { key } = await searchParams;
  const order = await (await demoCaller()).checkout.order({ id: orderId }).catch(() => undefined);
  if (!order) notFound();
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
      {order.payment ? <ProviderCalls calls={chargeAttemptsOf(order.payment.id)} /> : null}
      {key && <AttemptsPanel idempotencyKey={key} />}
    </div>
  );
}
