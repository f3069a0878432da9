/** The API docs page: every REST operation of the OpenAPI document, readable; the problem types have pages of their own. */
import type { Metadata } from "next";
import Link from "next/link";
import { openApiDocument } from "@/server/app";

export const metadata: Metadata = { title: "API docs" };

type Operation = {
  summary: string;
  operationId: string;
  parameters?: { name: string; in: string; required: boolean; description?: string }[];
  requestBody?: { content: { "application/json": { schema: unknown } } };
  responses: Record<string, { description: string }>;
};

export default function DocsPage() {
  const doc = openApiDocument();
  return (
    <div className="stack">
      <section>
        <h1>API docs</h1>
        <p className="lead">{doc.info.description}</p>
        <p>
          Send <code>Authorization: Bearer &lt;token&gt;</code> on every <code>/api/v1</code> call (create a tenant with{" "}
          <code>npm run --silent tenant -- create &lt;name&gt;</code>). Errors are <code>application/problem+json</code>; each{" "}
          <code>type</code> is a page, all listed under <Link href="/docs/problems">problem types</Link>. The
          machine-readable document is at <a href="/api/openapi.json">/api/openapi.json</a>.
        </p>
      </section>
      {Object.entries(doc.paths).map(([path, methods]) =>
        Object.entries(methods as Record<string, Operation>).map(([method, op]) => (
          <section key={`${method} ${path}`} className="card endpoint" aria-label={`${method.toUpperCase()} ${path}`}>
            <h2>
              <span className="method">{method.toUpperCase()}</span> <code>/api{path}</code>
            </h2>
            <p>{op.summary}</p>
            {op.parameters && op.parameters.length > 0 && (
              <ul>
                {op.parameters.map((p) => (
                  <li key={`${p.in}:${p.name}`}>
                    <code>{p.name}</code> ({p.in}
                    {p.required ? ", required" : ""}){p.description ? `: ${p.description}` : ""}
                  </li>
                ))}
              </ul>
            )}
            {op.requestBody && <pre>{JSON.stringify(op.requestBody.content["application/json"].schema, null, 2)}</pre>}
            <ul className="small">
              {Object.entries(op.responses).map(([status, r]) => (
                <li key={status}>
                  <strong>{status}</strong> {r.description}
                </li>
              ))}
            </ul>
          </section>
        )),
      )}
    </div>
  );
}
