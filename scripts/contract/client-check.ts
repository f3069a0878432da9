/**
 * A client generated from the document with openapi-typescript, checked
 * against the API's real answers: each answer the traffic got becomes a
 * typed constant of its operation's response type (`operations[id]
 * ["responses"][status]`), and the compiler must accept every one, with its
 * excess-property check on. A member, status or operation the document
 * leaves out fails here as it would in a client's build.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { projectRoot } from "../../db/cluster-home";
import { bin, run } from "./processes";
import type { Answer } from "./traffic";

export type ClientOptions = { document: string; answers: Answer[]; out: string; log: (line: string) => void };

export async function checkClient(o: ClientOptions): Promise<{ ok: boolean; answers: number }> {
  const dir = path.join(o.out, "client");
  mkdirSync(dir, { recursive: true });
  const generated = await run(bin("openapi-typescript"), [o.document, "--output", path.join(dir, "openapi.ts")], {
    cwd: projectRoot,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (generated !== 0) return { ok: false, answers: 0 };
  const lines = [
    'import type { operations } from "./openapi";',
    "",
    "/** The body type of one answer of one operation, as the generated client sees it. */",
    'type Body<O extends keyof operations, S extends keyof operations[O]["responses"]> = operations[O]["responses"][S] extends { content: infer C } ? C[keyof C] : never;',
    "",
    ...o.answers.map((a, i) => `export const answer${i}: Body<${JSON.stringify(a.operation)}, ${a.status}> = ${JSON.stringify(a.body)};`),
  ];
  writeFileSync(path.join(dir, "answers.ts"), `${lines.join("\n")}\n`);
  const code = await run(
    bin("tsc"),
    [
      "--noEmit",
      "--strict",
      "--skipLibCheck",
      "--target",
      "es2022",
      "--module",
      "esnext",
      "--moduleResolution",
      "bundler",
      path.join(dir, "answers.ts"),
    ],
    { cwd: dir },
  );
  o.log(
    `openapi-typescript: ${o.answers.length} real answers of ${new Set(o.answers.map((a) => a.operation)).size} operations type-checked, tsc exit ${code}`,
  );
  return { ok: code === 0, answers: o.answers.length };
}
