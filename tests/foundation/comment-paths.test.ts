/**
 * Comments that point a reader at another file must point at one that
 * exists: a moved or deleted file leaves its citations behind, and a reader
 * who follows one finds nothing. Every repository path named in a comment
 * (`server/…`, `packages/…/src/…`, `docs/…`, …) of the sources is checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");
const SOURCE_DIRS = [
  "app",
  "server",
  "db",
  "scripts",
  "tests",
  "e2e",
  "bench",
  "packages/trpc/src",
  "packages/exactly-once-check/src",
  "examples",
];
const SKIP = new Set(["node_modules", ".next", "dist"]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (SKIP.has(name)) return [];
    if (statSync(full).isDirectory()) return sources(full);
    return /\.(ts|tsx)$/.test(name) ? [full] : [];
  });
}

/** Comment lines only (a `//` comment, or a line of a block comment): paths in code are checked by the compiler or by running. */
const commentLines = (text: string) => text.split("\n").filter((line) => /^\s*(\/\/|\/\*|\*)/.test(line));

const CITED =
  /(?<![\w./@-])((?:app|server|db|scripts|tests|e2e|bench|docs|ops|packages|examples|patches)\/[\w.[\]-]+(?:\/[\w.[\]-]+)*\.(?:ts|tsx|md|yml|json|sh|sql|patch))(?![\w/])/g;

describe("paths cited in comments", () => {
  it("name files that exist", () => {
    const missing: string[] = [];
    for (const file of SOURCE_DIRS.filter((d) => existsSync(path.join(root, d))).flatMap((d) => sources(path.join(root, d)))) {
      for (const line of commentLines(readFileSync(file, "utf8"))) {
        for (const [, cited] of line.matchAll(CITED)) {
          if (!existsSync(path.join(root, cited!))) missing.push(`${path.relative(root, file)}: ${cited}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
