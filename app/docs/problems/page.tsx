/** The problem type registry, readable: every `type` the app answers with, its status and what it means (server/problems.ts). */
import type { Metadata } from "next";
import Link from "next/link";
import { problemPage, PROBLEMS, problemTitle, problemType, type ProblemSlug } from "@/server/problems";
import { MarkdownText } from "../_components/markdown-text";

export const metadata: Metadata = { title: "Problem types" };

export default function ProblemTypesPage() {
  const slugs = Object.keys(PROBLEMS) as ProblemSlug[];
  return (
    <div className="stack">
      <section>
        <h1>Problem types</h1>
        <p className="lead">
          Every error is <code>application/problem+json</code> (RFC 9457). Its <code>type</code> is one of these URIs; each leads to a page
          that says what it means and which members it carries.
        </p>
      </section>
      <section className="card">
        {/* Read one type at a time: on a phone each row is a card (globals.css, `.cards`). */}
        <table className="cards">
          <thead>
            <tr>
              <th scope="col">type</th>
              <th scope="col">status</th>
              <th scope="col">meaning</th>
            </tr>
          </thead>
          <tbody>
            {slugs.map((slug) => (
              <tr key={slug}>
                <td>
                  <Link href={problemPage(slug)}>
                    <code>{problemType(slug)}</code>
                  </Link>
                </td>
                <td data-label="Status">
                  {PROBLEMS[slug].status} {problemTitle(slug)}
                </td>
                <td>
                  <MarkdownText text={PROBLEMS[slug].about} inline />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}
