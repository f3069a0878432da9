/**
 * Running a documented block as written (e2e/specs/readme*.spec.ts): the
 * block is taken from README.md (or a page of docs/) by its heading and run
 * by bash with `set -euo pipefail`, so the documents cannot drift from what
 * works.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";

export const root = path.resolve(import.meta.dirname, "..", "..");

/** The first ```bash block after `## <heading>` of `file` (the README unless given). */
export function readmeBlock(heading: string, file = "README.md"): string {
  const readme = readFileSync(path.join(root, file), "utf8");
  const section = readme.split(new RegExp(`^## ${heading.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"))[1];
  const block = section?.match(/^```bash\n([\s\S]*?)^```$/m)?.[1];
  if (!block) throw new Error(`${file} has no \`\`\`bash block under "## ${heading}"`);
  return block;
}

export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))));
}

/** Runs `script` from the checkout; resolves with its exit code and everything it printed, interleaved. */
export async function runScript(script: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  const run = spawn("bash", ["-c", `set -euo pipefail\n${script}`], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  run.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  run.stderr!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return { code: await exited(run), out };
}
