/**
 * npm run --silent tenant -- create <name>
 *
 * Creates a tenant and prints its API token. On a terminal the token comes
 * with a line saying what it is; otherwise (`TOKEN=$(npm run --silent tenant
 * -- create Acme)`) the token alone, so the capture is the token. Works with
 * or without the server running: it uses the running server's database, or
 * an embedded cluster for the length of the command.
 */
import "./use-running-server";
import { createTenant } from "../server/tenants/service";
import { runCli } from "./cli";
import { answerHelp } from "./help";

const USAGE = "Usage: npm run --silent tenant -- create <name>";

answerHelp(`${USAGE}

Creates a tenant and prints its API token, shown only now (alone on the line
when the output is not a terminal: TOKEN=$(npm run --silent tenant -- create Acme)).`);

const [command, ...rest] = process.argv.slice(2);
const name = rest.join(" ").trim();
if (command !== "create" || !name) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}

runCli(async (booted) => {
  const { tenant, token } = await createTenant(booted.db, name);
  if (process.stdout.isTTY) process.stdout.write(`Created tenant ${tenant.id} (${tenant.name}). Its API token, shown only now:\n`);
  process.stdout.write(`${token}\n`);
  return 0;
});
