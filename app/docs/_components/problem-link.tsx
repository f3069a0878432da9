/** A problem type as its URI, linking to its page (the URI itself redirects there; the link saves the hop). */
import Link from "next/link";
import { isProblemSlug, PROBLEM_TYPE_BASE, problemPage, problemType } from "@/server/problems";

export function ProblemLink({ slug }: { slug: string }) {
  if (!isProblemSlug(slug)) return <code>{slug}</code>;
  return (
    <Link href={problemPage(slug)}>
      <code>{problemType(slug)}</code>
    </Link>
  );
}

/** The slug of a problem type URI such as `/problems/not-found`, or undefined for any other text. */
export function problemSlugOf(text: string): string | undefined {
  const slug = text.startsWith(PROBLEM_TYPE_BASE) ? text.slice(PROBLEM_TYPE_BASE.length) : "";
  return isProblemSlug(slug) ? slug : undefined;
}
