/**
 * Playwright's web server: the app on a fresh database of its own, so e2e
 * never touches the developer's `.data/pg` and works with or without
 * DATABASE_URL (with it, a new database on that server, dropped afterwards).
 *
 * Playwright stops its web server by signalling the whole process group. The
 * app and whatever else the stack started would get that signal together and
 * stop in no order, a database under an app still using it. So the
 * database and the app run in a detached group (`support/stack.ts`) and this
 * process only relays: a signal disconnects the IPC channel, the stack stops
 * the app and then the database, and this process exits with the stack's
 * code. Should Playwright SIGKILL this process, the channel closes all the
 * same and the stack still cleans up.
 */
import { fork } from "node:child_process";
import path from "node:path";

const stack = fork(path.join(import.meta.dirname, "support", "stack.ts"), [], {
  detached: true,
  execArgv: ["--import", "tsx"],
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});

for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (stack.connected) stack.disconnect();
  });
}

stack.on("exit", (code) => process.exit(code ?? 1));
