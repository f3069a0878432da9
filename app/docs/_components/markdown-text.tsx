/**
 * The document's descriptions are Markdown. Rendered to React elements (no
 * HTML string, so nothing is injected), with raw HTML in the text left as
 * text, and any inline code that is a problem type made a link to its page.
 */
import { compiler } from "markdown-to-jsx/react";
import type { ReactNode } from "react";
import { ProblemLink, problemSlugOf } from "./problem-link";

function InlineCode({ children }: { children?: ReactNode }) {
  const slug = typeof children === "string" ? problemSlugOf(children) : undefined;
  return slug ? <ProblemLink slug={slug} /> : <code>{children}</code>;
}

/** `inline`: a phrase inside a sentence or cell, without a paragraph of its own. */
export function MarkdownText({ text, inline = false }: { text: string; inline?: boolean }) {
  return compiler(text, { disableParsingRawHTML: true, forceInline: inline, forceBlock: !inline, overrides: { code: InlineCode } });
}
