/**
 * Node-only start-up, behind one guard: anything that fails, an invalid
 * environment while loading included, ends the process with one line
 * ("Cannot start: ...") and a non-zero code. A server that cannot start must
 * not stay up answering 500. The start-up itself is `server/startup.ts`.
 */
function cannotStart(error: unknown): never {
  process.stderr.write(`Cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

export async function start(): Promise<void> {
  try {
    const { startServer } = await import("./server/startup");
    startServer(cannotStart);
  } catch (error) {
    cannotStart(error);
  }
}
