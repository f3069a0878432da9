/**
 * `npm start` (DATABASE_URL required): migrates, serves the app on
 * HOST:PORT (127.0.0.1:3000 unless told otherwise: loopback, until you mean
 * to face a network) and runs the completer and the expiry sweep, as the
 * guide's "Run the completer and the sweep" says. SIGTERM or Ctrl-C
 * (SIGINT) stops the loops, lets requests in flight answer and ends the
 * pool; a second signal does not cut that short.
 */
import type { AddressInfo } from "node:net";
import { createCompleter, migrate, startExpirySweep } from "@exactly-once/trpc";
import postgres from "postgres";
import { createApp, createTables, databaseProvider } from "./app.js";
import { createServer } from "./server.js";

const url = process.env.DATABASE_URL;
if (!url) throw new Error("Set DATABASE_URL to a PostgreSQL database.");
// The tables below are created "if not exists": on every start but the first, PostgreSQL answers each with a
// NOTICE that postgres-js would print as a raw object. migrate() quiets its own.
const sql = postgres(url, { onnotice: () => undefined });
await migrate(sql);
await createTables(sql);

const app = createApp(sql, databaseProvider(sql));
const completer = createCompleter({
  sql: () => sql,
  procedures: ["pay"],
  rerun: (due, call) => app.createCaller({ tenant: { id: due.tenantId }, ...call }).pay(due.input as never),
});
const loops = [completer.start(5_000), startExpirySweep({ sql: () => sql, everyMs: 60_000 })];

const server = createServer(app.router);
const host = process.env.HOST ?? "127.0.0.1";
server.listen(Number(process.env.PORT ?? 3000), host, () => {
  process.stdout.write(`listening on http://${host}:${(server.address() as AddressInfo).port}\n`);
});

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  process.stdout.write("stopping: requests in flight answer first\n");
  for (const loop of loops) loop.stop();
  server.close(() => void sql.end());
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
