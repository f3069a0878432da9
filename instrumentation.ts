/** Next.js start-up hook: the Node.js server registers its tracing (OpenTelemetry) and prepares its database before serving. */
export async function register() {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { start } = await import("./instrumentation.node");
    await start();
  }
}
