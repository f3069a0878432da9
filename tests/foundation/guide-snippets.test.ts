/**
 * The package guide's code is code: every ```ts block of
 * packages/trpc/README.md is written to a file of its own and type-checked
 * by tsc against the package as an adopter installs it (`@exactly-once/trpc`,
 * its built types), strict. A block whose fence names a file (```ts
 * title=server.ts) is written under that name, so a later block can import
 * what it exports (`./server.js`), as files of one app would; every other
 * block stands alone. A snippet that uses a name it never defines, or the
 * package's API as it no longer is, fails here.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");
const GUIDE = path.join(root, "packages", "trpc", "README.md");

/** The guide's TypeScript blocks, each with the file name it is written to. */
export function snippets(markdown: string): { file: string; code: string }[] {
  return [...markdown.matchAll(/^```ts(?: title=(\S+))?\n([\s\S]*?)^```$/gm)].map((m, i) => ({
    file: m[1] ?? `snippet-${i + 1}.ts`,
    code: m[2]!,
  }));
}

describe("the package guide's snippets", () => {
  it("type-check, each a module of its own, against the package's public types", () => {
    const blocks = snippets(readFileSync(GUIDE, "utf8"));
    expect(blocks.length).toBeGreaterThanOrEqual(7);
    // Inside the checkout, so `@exactly-once/trpc`, `postgres` and the rest resolve as in an app that installed them.
    const dir = path.join(root, "node_modules", ".cache", "guide-snippets");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
    const compilerOptions = {
      strict: true,
      noEmit: true,
      module: "nodenext",
      moduleResolution: "nodenext",
      target: "es2022",
      lib: ["es2022", "dom", "dom.iterable"],
      types: ["node"],
      skipLibCheck: true,
    };
    writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
    for (const { file, code } of blocks) writeFileSync(path.join(dir, file), code);
    const tsc = spawnSync(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", dir], { encoding: "utf8" });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  }, 60_000);
});
