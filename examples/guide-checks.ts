// What examples/guide.sh checks on the guide's server beyond its client.ts, over plain HTTP as any client
// would send it: a key sent again with another amount is a 422 that runs nothing, and 20 sends of one fresh key
// released together (each on a connection of its own, headers first, the bodies at one moment; half say
// `Idempotency-Attempt: 1`, the first-send path that claims without looking) run the mutation once.
// Prints one JSON line: { mismatch, statuses, depositIds, key } for the shell to check against the table.
import { randomUUID } from "node:crypto";
import http from "node:http";

type Answer = { status: number; text: string };

const ENDPOINT = "http://127.0.0.1:3000/deposit";

function prepare(key: string, body: unknown, extra: Record<string, string> = {}) {
  const payload = Buffer.from(JSON.stringify(body));
  const req = http.request(ENDPOINT, {
    method: "POST",
    agent: false,
    headers: { "content-type": "application/json", "content-length": payload.length, "idempotency-key": key, ...extra },
  });
  const connected = new Promise<void>((resolve) =>
    req.once("socket", (socket) => (socket.connecting ? socket.once("connect", () => resolve()) : resolve())),
  );
  const answer = new Promise<Answer>((resolve, reject) => {
    req.once("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.once("error", reject);
  });
  req.flushHeaders();
  return { connected, answer, release: () => req.end(payload) };
}

const send = async (key: string, body: unknown) => {
  const one = prepare(key, body);
  one.release();
  return one.answer;
};

const mismatchKey = randomUUID();
const first = await send(mismatchKey, { account: "acct_guide", amount: 100 });
const changed = await send(mismatchKey, { account: "acct_guide", amount: 101 });

const key = randomUUID();
const burst = Array.from({ length: 20 }, (_, i) =>
  prepare(key, { account: "acct_burst", amount: 700 }, i % 2 ? { "idempotency-attempt": "1" } : {}),
);
await Promise.all(burst.map((one) => one.connected));
for (const one of burst) one.release();
const answers = await Promise.all(burst.map((one) => one.answer));
const depositIds = [...new Set(answers.filter((a) => a.status === 200).map((a) => JSON.parse(a.text).result.data.depositId))];
process.stdout.write(
  `${JSON.stringify({
    mismatch: [first.status, changed.status],
    statuses: answers.map((a) => a.status).sort(),
    depositIds,
    key,
  })}\n`,
);
