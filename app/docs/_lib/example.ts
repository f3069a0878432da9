/**
 * One example call per operation, from the document's own examples: the
 * parameters' `example`, the request body's and the success answer's. So
 * the page shows what Prism and Portman check, and cannot drift from it.
 */
import { successOf, type Operation } from "./operations";

/** A value inside single quotes for a POSIX shell. */
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

function urlOf({ path, op }: Operation): string {
  const params = op.parameters ?? [];
  const filled = params
    .filter((p) => p.in === "path")
    .reduce((url, p) => url.replace(`{${p.name}}`, encodeURIComponent(String(p.example))), path);
  const query = new URLSearchParams();
  for (const p of params.filter((p) => p.in === "query" && p.example !== undefined)) {
    // An exploded object parameter sends its members as parameters of their own.
    const members = typeof p.example === "object" && p.example !== null ? Object.entries(p.example) : [[p.name, p.example]];
    for (const [name, value] of members) query.append(String(name), String(value));
  }
  const search = query.size ? `?${query}` : "";
  return `$BASE/api${filled}${search}`;
}

function credentialOf(op: Operation["op"]): string[] {
  // An empty `security` waives the document's bearer token; the webhook signs its body instead.
  if (op.security?.length === 0) return [];
  if (op.security?.some((s) => "pspSignature" in s)) return ["Psp-Signature: <hex HMAC-SHA256 of the body>"];
  return ["Authorization: Bearer $TOKEN"];
}

/** The curl command: `$BASE` and `$TOKEN` are the reader's, said once at the top of the page. */
export function curlOf(operation: Operation): string {
  const { method, op } = operation;
  const headers = [
    ...credentialOf(op),
    ...(op.parameters ?? []).filter((p) => p.in === "header").map((p) => `${p.name}: ${String(p.example)}`),
    ...(op.requestBody ? ["Content-Type: application/json"] : []),
  ];
  const body = op.requestBody?.content["application/json"].example;
  const lines = [
    `curl${method === "GET" ? "" : ` -X ${method}`} "${urlOf(operation)}"`,
    ...headers.map((h) => `  -H ${h.includes("$") ? `"${h}"` : shellQuote(h)}`),
    ...(op.requestBody ? [`  -d ${shellQuote(JSON.stringify(body ?? {}))}`] : []),
  ];
  return lines.join(" \\\n");
}

/** The success answer: its status and the document's example body, pretty-printed. */
export function answerOf({ op }: Operation): { status: string; body?: string } {
  const { status, media } = successOf(op);
  return { status, body: media?.example === undefined ? undefined : JSON.stringify(media.example, null, 2) };
}
