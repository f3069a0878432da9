import { demoCaller } from "@/server/caller";
import { app } from "@/server/app";

export const dynamic = "force-dynamic";

export default async function HomePage() {
  const { data: catalog } = await (await demoCaller()).catalog.list();
  return (
    <div className="stack">
      <section className="hero">
        <h1>Exactly Once</h1>
        <p className="lead">
          Networks drop answers mid-request, clients retry, people double-click, proxies duplicate. This app shows, in working code, how
          payments and checkouts are made safe to retry: every consequential mutation runs <strong>exactly once</strong>.
        </p>
        <ul className="points">
          <li>
            An <strong>idempotency middleware for tRPC</strong> on PostgreSQL: the key is claimed atomically, the request fingerprinted, the
            result stored and replayed byte for byte.
          </li>
          <li>
            Concurrent duplicates wait or get <code>409</code>; crashed holders’ keys are taken over after a lease; keys expire.
          </li>
          <li>The same procedures over REST for outside clients, described in an OpenAPI document.</li>
        </ul>
        <p className="actions">
          <a className="button" href="/checkout">
            Try the checkout
          </a>
          {/* The lab exists in demo mode only (this page is rendered per request, so it asks the running server). */}
          {app.settings.DEMO_MODE ? (
            <a className="button secondary" href="/lab">
              Run the failure lab
            </a>
          ) : null}
          <a className="button secondary" href="/admin">
            Open the admin dashboard
          </a>
          <a className="button secondary" href="/docs">
            Read the API docs
          </a>
        </p>
      </section>

      <section aria-labelledby="catalog-heading">
        <h2 id="catalog-heading">The demo catalog</h2>
        <p className="muted">Read through tRPC from PostgreSQL; every tenant starts with it.</p>
        {/* A product at a time on a phone: each row a card (globals.css, `.cards`). */}
        <table className="table cards">
          <thead>
            <tr>
              <th scope="col">Product</th>
              <th scope="col">SKU</th>
              <th scope="col" className="num">
                Price
              </th>
            </tr>
          </thead>
          <tbody>
            {catalog.map((p) => (
              <tr key={p.sku}>
                <td>
                  <div className="product-name">{p.name}</div>
                  <div className="muted small">{p.description}</div>
                </td>
                <td data-label="SKU">
                  <code>{p.sku}</code>
                </td>
                <td className="num" data-label="Price">
                  {p.price} {p.currency}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}
