/**
 * npm run --silent tenant -- create <name>
 *
 * Creates a tenant and prints its API token alone on the last line of
 * standard output. Works with or without the server running: with embedded
 * PostgreSQL it uses the server's cluster when one runs, else starts it for
 * the duration of the command.
 */
import { ensureDatabase } from "../db/bootstrap";
import { closeDatabase } from "../db/client";
import { createTenant } from "../server/tenants/service";

const USAGE = "usage: npm run --silent tenant -- create <name>";

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const name = rest.join(" ").trim();
  if (command !== "create" || !name) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const booted = await ensureDatabase({ seed: false });
  try {
    const { tenant, token } = await createTenant(booted.db, name);
    process.stdout.write(`Created tenant ${tenant.id} (${tenant.name}). Its API token, shown only now:\n${token}\n`);
    return 0;
  } finally {
    await closeDatabase();
    await booted.embedded?.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
