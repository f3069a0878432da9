/**
 * One problem type's page, at the type's own URI: its status and title, what
 * it means, its members, and the operations that can answer with it, all
 * read from the registry (server/problems.ts) and the OpenAPI document.
 */
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { app } from "@/server/app";
import { isProblemSlug, PROBLEMS, problemTitle, problemType, type ProblemSlug } from "@/server/problems";
import { problemSchema, problemSchemaName } from "@/server/rest/openapi-problems";
import { MarkdownText } from "../../_components/markdown-text";

type Params = { params: Promise<{ slug: string }> };

export const generateStaticParams = () => Object.keys(PROBLEMS).map((slug) => ({ slug }));

export async function generateMetadata({ params }: Params): Promise<Metadata> {
  const { slug } = await params;
  return { title: isProblemSlug(slug) ? `Problem: ${slug}` : "Problem type" };
}

/** The operations whose responses name this type's schema, each with its section's anchor on /docs (its operationId). */
function operationsWith(slug: ProblemSlug): { name: string; anchor: string }[] {
  const needle = `"#/components/schemas/${problemSchemaName(slug)}"`;
  return Object.entries(app.openApiDocument().paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, { operationId: string; responses: unknown }>)
      .filter(([, op]) => JSON.stringify(op.responses).includes(needle))
      .map(([method, op]) => ({ name: `${method.toUpperCase()} /api${path}`, anchor: op.operationId })),
  );
}

export default async function ProblemTypePage({ params }: Params) {
  const { slug } = await params;
  if (!isProblemSlug(slug)) notFound();
  const spec = PROBLEMS[slug];
  const members = Object.entries((problemSchema(slug).properties ?? {}) as Record<string, { description?: string }>).slice(4);
  const operations = operationsWith(slug);
  return (
    <div className="stack">
      <section>
        <p>
          <Link href="/docs/problems">Problem types</Link>
        </p>
        <h1>
          <code>{problemType(slug)}</code>
        </h1>
        <p className="lead">
          {spec.status} {problemTitle(slug)}. <MarkdownText text={spec.about} inline />
        </p>
      </section>
      <section className="card" aria-label="Members">
        <h2>Members</h2>
        <ul>
          <li>
            <code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code>: as in RFC 9457; <code>detail</code> is for
            people.
          </li>
          {members.map(([name, schema]) => (
            <li key={name}>
              <code>{name}</code>
              {schema.description ? `: ${schema.description}` : ""}
            </li>
          ))}
        </ul>
      </section>
      <section className="card" aria-label="Operations">
        <h2>Answered by</h2>
        {operations.length ? (
          <ul>
            {operations.map((op) => (
              <li key={op.anchor}>
                <Link href={`/docs#${op.anchor}`}>
                  <code>{op.name}</code>
                </Link>
              </li>
            ))}
          </ul>
        ) : (
          <p>No operation of the REST surface under /api/v1; the app's own pages (admin, storefront, lab) meet it.</p>
        )}
      </section>
    </div>
  );
}
