/**
 * npm run db:migrate — applies the committed migrations to DATABASE_URL (or the embedded cluster),
 * whatever MIGRATE_ON_START says; it refuses a pooler (DATABASE_POOLED=true) with one line.
 */
import "./use-running-server";
import { runCli } from "./cli";
import { answerHelp } from "./help";

answerHelp(`Usage: npm run db:migrate

Applies the committed migrations to DATABASE_URL (or the embedded cluster),
whatever MIGRATE_ON_START says. Refuses a pooler (DATABASE_POOLED=true).`);

// ensureDatabase, which runCli calls first, applies them.
runCli(
  async () => {
    process.stdout.write("Migrations applied.\n");
    return 0;
  },
  { migrate: true },
);
