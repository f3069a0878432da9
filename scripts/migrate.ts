/** npm run db:migrate — applies the committed migrations to DATABASE_URL (or the embedded cluster). */
import "./use-running-server";
import { runCli } from "./cli";

// ensureDatabase, which runCli calls first, applies them.
runCli(async () => {
  process.stdout.write("Migrations applied.\n");
  return 0;
});
