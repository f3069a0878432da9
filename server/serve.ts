/**
 * The production server: Next.js's request handler (the build in `.next/`)
 * on an HTTP server of the app's own, which puts the edge (edge/node-edge.ts)
 * in front of it. Run as `node --import tsx server/serve.ts` with HOST and
 * PORT by the run command, the cluster's instances and the start-up tests,
 * in place of `next start` (with `--dev`, of `next dev`: `npm run dev`).
 * Next.js's instrumentation hook still does the start-up (database,
 * completer, signals) when the handler is prepared.
 */
async function serve(dev: boolean): Promise<void> {
  // As `next start` and `next dev` have it, before React or Next.js is loaded.
  (process.env as Record<string, string>).NODE_ENV = dev ? "development" : "production";
  const [{ default: next }, { projectRoot }, { createEdgeServer }, { env }, { logger }] = await Promise.all([
    import("next"),
    import("../db/cluster-home"),
    import("./edge/node-edge"),
    import("./env"),
    import("./logger"),
  ]);
  // The edge logs with this process's own logger; Next.js's bundles load another, whose level the root sets.
  logger.level = env.LOG_LEVEL;
  // Requests come only once it listens, when `handle` below is set.
  const server = createEdgeServer({ proxy: env.TRUST_PROXY, traceCallers: env.TRUST_TRACEPARENT }, (req, res) => void handle(req, res));
  // Given the server, Next.js serves its development reloads (a WebSocket upgrade) on it too.
  const app = next({ dev, dir: projectRoot, hostname: env.HOST, port: env.PORT, httpServer: server });
  const handle = app.getRequestHandler();
  await app.prepare();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(env.PORT, env.HOST, resolve);
  });
}

serve(process.argv.includes("--dev")).catch((error: unknown) => {
  process.stderr.write(`Cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
