/**
 * A second app instance for instances.test.ts: its own process, pool and
 * memory, on the same database and provider, in demo mode. It serves the
 * lab's tRPC requests through the real route handlers and prints what it got.
 * argv: start <scenario> <target>  — starts a run and sends its first checkout
 *       report <runId>             — builds the run's report here
 */
import { GET, POST } from "../../app/api/trpc/[trpc]/route";
import { openAppDatabase } from "../../server/database";
import { env } from "../../server/env";
import { LAB_RUN_HEADER } from "../../server/lab/scenarios";

const BASE = "http://127.0.0.1/api/trpc";
const [action, a, b] = process.argv.slice(2) as [string, string, string?];
openAppDatabase(process.env.DATABASE_URL!, { max: 4, pooled: env.DATABASE_POOLED });

const data = async (res: Response) => (JSON.parse(await res.text()) as { result: { data: unknown } }).result.data;
const post = (procedure: string, body: unknown, headers: Record<string, string> = {}) =>
  POST(
    new Request(`${BASE}/${procedure}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );

if (action === "start") {
  const start = (await data(await post("lab.start", { scenario: a, target: b }))) as { runId: string; key: string; destination: string };
  const cart = JSON.parse(process.env.LAB_CART!) as { items: unknown[] };
  const first = await post(
    b === "naive" ? "lab.naivePay" : "checkout.pay",
    { ...cart, destination: start.destination },
    { [LAB_RUN_HEADER]: start.runId, ...(b === "naive" ? {} : { "idempotency-key": start.key }) },
  );
  const answered = await first.text().then(
    () => "answered",
    () => "lost",
  );
  process.stdout.write(`${JSON.stringify({ ...start, first: answered })}\n`);
} else {
  process.stdout.write(
    `${JSON.stringify(await data(await GET(new Request(`${BASE}/lab.report?input=${encodeURIComponent(JSON.stringify({ runId: a }))}`))))}\n`,
  );
}
process.exit(0);
