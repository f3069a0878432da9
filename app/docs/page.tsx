/**
 * The API docs page: the OpenAPI document, readable. A table of contents,
 * then one section per operation with its fields, an example call and its
 * problem types (each a link to its page), and the long value lists once at
 * the end instead of in every field that takes them.
 */
import type { Metadata } from "next";
import Link from "next/link";
import { app } from "@/server/app";
import { MarkdownText } from "./_components/markdown-text";
import { OperationSection } from "./_components/operation-section";
import { longEnumsOf, operationRows, sharedAnchorOf, sharedParameters } from "./_lib/fields";
import { operationsOf, type ApiDocument } from "./_lib/operations";

export const metadata: Metadata = { title: "API docs" };

export default function DocsPage() {
  const doc = app.openApiDocument();
  const operations = operationsOf(doc as ApiDocument);
  const shared = sharedParameters(operations.map(({ op }) => op.parameters ?? []));
  const lists = longEnumsOf(
    operations.flatMap(({ op }) => {
      const { takes, gives } = operationRows(op);
      return [...takes, ...gives];
    }),
  );
  return (
    <div className="stack docs">
      <section>
        <h1>API docs</h1>
        <div className="lead">
          <MarkdownText text={doc.info.description} />
        </div>
        <p>
          Send <code>Authorization: Bearer &lt;token&gt;</code> on every <code>/api/v1</code> call (create a tenant with{" "}
          <code>npm run --silent tenant -- create &lt;name&gt;</code>). Errors are <code>application/problem+json</code>; each{" "}
          <code>type</code> is a page, all listed under <Link href="/docs/problems">problem types</Link>. The machine-readable document is
          at <a href="/api/openapi.json">/api/openapi.json</a>. The examples read the server from <code>$BASE</code> (such as{" "}
          <code>http://localhost:3000</code>) and the token from <code>$TOKEN</code>.
        </p>
        {shared.length > 0 && <p>Said once here rather than in every operation that takes it:</p>}
        {shared.length > 0 && (
          <dl className="facts">
            {shared.map((p) => (
              <div key={sharedAnchorOf(p)} className="field-row">
                <dt id={sharedAnchorOf(p)}>
                  <code>{p.name}</code> ({p.in})
                </dt>
                <dd>
                  <MarkdownText text={p.description ?? ""} inline />
                </dd>
              </div>
            ))}
          </dl>
        )}
      </section>
      <nav aria-label="Contents" className="card docs-toc">
        <h2>Contents</h2>
        <ol>
          {operations.map(({ anchor, method, path, op }) => (
            <li key={anchor}>
              <a href={`#${anchor}`} title={op.summary}>
                <span className="method">{method}</span> <code>/api{path}</code>
              </a>
            </li>
          ))}
          {lists.map((list) => (
            <li key={list.id}>
              <a href={`#${list.id}`}>{list.title}</a> <span className="muted small">all {list.values.length} values</span>
            </li>
          ))}
        </ol>
      </nav>
      {operations.map((operation) => (
        <OperationSection key={operation.anchor} operation={operation} shared={shared} />
      ))}
      {lists.map((list) => (
        <section key={list.id} id={list.id} className="card" aria-label={list.title}>
          <h2>{list.title}</h2>
          <p>The {list.values.length} values a field of this kind takes:</p>
          <p className="docs-values">
            {list.values.map((value) => (
              <code key={value}>{value}</code>
            ))}
          </p>
        </section>
      ))}
    </div>
  );
}
