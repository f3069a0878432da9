/**
 * Ports on 127.0.0.1, asked of the system with a real bind: whether one is
 * free now, and one that is. Shared by what picks its own port (the
 * embedded cluster, the provider stand-in) and by the tests.
 */
import { createServer } from "node:net";

/** Whether nothing listens on `port` now (a later bind can still lose it to someone faster). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 that nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port"))));
    });
  });
}

/** `preferred` when free (a stable port for a developer's tools), else one the system picks. */
export async function firstFreePort(preferred: number): Promise<number> {
  return (await portFree(preferred)) ? preferred : freePort();
}
