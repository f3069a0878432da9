/**
 * npm run operator -- add NAME --role operator|viewer
 * npm run operator -- remove NAME
 * npm run operator -- list
 *
 * Manages the operator accounts of /admin. `add` asks for the password on a
 * terminal (twice, not echoed) or reads it from standard input otherwise
 * (`printf '%s\n' "$PW" | npm run operator -- add ana --role viewer`), so it
 * never appears in a process list or shell history. Removing an operator
 * ends their sessions. Works with or without the server running.
 */
import "./use-running-server";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { addOperator, listOperators, OPERATOR_NAME, OperatorRole, operatorPasswordDefect, removeOperator } from "../server/admin/operators";
import { runCli } from "./cli";
import { answerHelp } from "./help";

const USAGE = "Usage: npm run operator -- add NAME --role operator|viewer | remove NAME | list";

answerHelp(`${USAGE}

add asks for the password on the terminal (or reads one line from standard
input), at least 12 characters; a viewer reads only. remove ends the
operator's sessions. list prints name, role and whether it is the demo one.`);

function usage(message?: string): never {
  process.stderr.write(`${message ? `${message}\n` : ""}${USAGE}\n`);
  process.exit(2);
}

/** One line from a terminal without echoing it: the prompt is written, then the output is muted. */
function askHidden(prompt: string): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  return new Promise((resolve) => {
    rl.question(prompt, (answer) => {
      rl.close();
      process.stderr.write("\n");
      resolve(answer);
    });
    muted = true;
  });
}

async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    const first = await askHidden("Password: ");
    if ((await askHidden("Again: ")) !== first) throw new Error("The two passwords differ.");
    return first;
  }
  let text = "";
  for await (const chunk of process.stdin) text += String(chunk);
  return text.split(/\r?\n/)[0] ?? "";
}

const [command, name, ...rest] = process.argv.slice(2);
const roles = Object.values(OperatorRole) as string[];

if (command === "add") {
  if (!name || !OPERATOR_NAME.test(name)) usage("NAME: lower-case letters, digits, '.', '_' or '-', at most 64.");
  const roleFlag = rest.indexOf("--role");
  const role = roleFlag === -1 ? undefined : rest[roleFlag + 1];
  if (!role || !roles.includes(role)) usage(`--role is one of ${roles.join(", ")}.`);
  const password = await readPassword();
  const defect = operatorPasswordDefect(password);
  if (defect) usage(defect);
  runCli(async (booted) => {
    const added = await addOperator(booted.db, name, role as OperatorRole, password);
    process.stdout.write(`Added operator ${added.name} (role ${added.role}).\n`);
    return 0;
  });
} else if (command === "remove" && name) {
  runCli(async (booted) => {
    if (!(await removeOperator(booted.db, name))) throw new Error(`No operator named ${name}.`);
    process.stdout.write(`Removed operator ${name}; their sessions are ended.\n`);
    return 0;
  });
} else if (command === "list" && !name) {
  runCli(async (booted) => {
    for (const o of await listOperators(booted.db))
      process.stdout.write(`${o.name}\t${o.role}${o.demo ? "\t(demo operator, demo mode only)" : ""}\n`);
    return 0;
  });
} else {
  usage();
}
