/**
 * The layering, checked in `npm test` (`npm run check:structure`): the rules
 * README.md's layout and server/idempotency/README.md describe.
 * @type {import("dependency-cruiser").IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "A cycle hides which part is built first; the composition root (server/app.ts) hands parts what they need instead.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "db-below-server",
      comment: "db/ is the lower floor: it takes its settings as parameters (server/database.ts builds them) and imports nothing from server/.",
      severity: "error",
      from: { path: "^db/" },
      to: { path: "^server/" },
    },
    {
      name: "lab-is-a-leaf",
      comment: "Only the composition root plugs the failure lab in; nothing on the money path (or any other part of the app) names it. The lab's own page may use its scenarios.",
      severity: "error",
      from: { path: "^(server|db|app)/", pathNot: "^(server/lab/|server/app\\.ts$|app/lab/)" },
      to: { path: "^server/lab/" },
    },
    {
      name: "idempotency-public-surface",
      comment:
        "The middleware is used through server/idempotency/index.ts; schema.ts (drizzle-kit) and client/ (the browser) are its other entry points. Its own tests may reach inside.",
      severity: "error",
      from: { pathNot: "^(server/idempotency/|tests/idempotency/)" },
      to: { path: "^server/idempotency/", pathNot: "^server/idempotency/(index\\.ts|schema\\.ts|client/)" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|\\.next|\\.data|packages/[^/]+/dist)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"], extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs"] },
  },
};
