/**
 * The documents link each other and the code: every relative link of the
 * README, docs/ and the packages' and examples' READMEs must reach a file
 * that exists, and a `#fragment` a heading of that file (GitHub's slugs), so
 * a page moved or a heading renamed cannot leave a reader at a dead end.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");

const documents = (): string[] => {
  const inDir = (dir: string, pick: (name: string) => boolean) =>
    existsSync(path.join(root, dir))
      ? readdirSync(path.join(root, dir))
          .filter(pick)
          .map((name) => path.join(dir, name))
      : [];
  const readmes = (dir: string) =>
    inDir(dir, (name) => statSync(path.join(root, dir, name)).isDirectory())
      .map((sub) => path.join(sub, "README.md"))
      .filter((f) => existsSync(path.join(root, f)));
  return [
    "README.md",
    ...inDir("docs", (name) => name.endsWith(".md")),
    ...readmes("packages"),
    ...readmes("examples"),
    "bench/README.md",
    "server/psp/README.md",
  ];
};

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^\p{L}\p{N} -]/gu, "")
    .replace(/ /g, "-");

const anchorsOf = (markdown: string) =>
  new Set(markdown.split("\n").flatMap((line) => (/^#{1,6} /.test(line) ? [slug(line.replace(/^#+ /, ""))] : [])));

/** Links outside fenced code blocks: `[text](target)`, the target without a title. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```$/gm, "");
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

describe("links in the documents", () => {
  it("reach files and headings that exist", () => {
    const broken: string[] = [];
    for (const doc of documents()) {
      const text = readFileSync(path.join(root, doc), "utf8");
      for (const target of links(text)) {
        // A URL, or a path of the running app (`/docs/problems/…`), is not a file of the repository.
        if (/^[a-z]+:/i.test(target) || target.startsWith("/")) continue;
        const [file, fragment] = target.split("#") as [string, string | undefined];
        const resolved = file ? path.join(path.dirname(path.join(root, doc)), decodeURIComponent(file)) : path.join(root, doc);
        if (!existsSync(resolved)) {
          broken.push(`${doc}: ${target} (no such file)`);
          continue;
        }
        if (fragment && resolved.endsWith(".md") && !anchorsOf(readFileSync(resolved, "utf8")).has(fragment))
          broken.push(`${doc}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
