/**
 * `--help` for every CLI, in a module that imports nothing: the run command
 * must not read the environment before it has set its defaults.
 */

/** `--help` or `-h` among the arguments: `usage` on standard output and exit 0, before anything is opened. */
export function answerHelp(usage: string): void {
  const args = process.argv.slice(2);
  if (!args.includes("--help") && !args.includes("-h")) return;
  process.stdout.write(`${usage.trimEnd()}\n`);
  process.exit(0);
}
