/**
 * `npm start` (DATABASE_URL required): migrates, serves the app on PORT
 * (default 3000) and runs the completer and the expiry sweep, as the guide's
 * "Run the completer and the sweep" says.
 */
import { createCompleter, migrate, startExpirySweep } from "@exactly-once/trpc";
import postgres from "postgres";
import { createApp, createTables, databaseProvider } from "./app.js";
import { createServer } from "./server.js";

const url = process.env.DATABASE_URL;
if (!url) throw new Error("Set DATABASE_URL to a PostgreSQL database.");
const sql = postgres(url);
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
server.listen(Number(process.env.PORT ?? 3000));
process.once("SIGTERM", () => {
  for (const loop of loops) loop.stop();
  server.close(() => void sql.end());
});
