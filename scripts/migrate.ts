/** npm run db:migrate — applies the committed migrations to DATABASE_URL (or the embedded cluster). */
import { ensureDatabase } from "../db/bootstrap";
import { closeDatabase } from "../db/client";

const booted = await ensureDatabase({ seed: false });
await closeDatabase();
await booted.embedded?.stop();
process.stdout.write("Migrations applied.\n");
