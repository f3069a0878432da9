/**
 * The layering, checked in `npm test` (`npm run check:structure`): the rules
 * README.md's layout and packages/trpc/README.md describe.
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
      comment:
        "db/ is the lower floor: it takes its settings as parameters (server/database.ts builds them) and imports nothing from server/.",
      severity: "error",
      from: { path: "^db/" },
      to: { path: "^server/" },
    },
    {
      name: "root-opens-the-pool",
      comment:
        "The pool is opened and handed out by the composition root (server/app.ts, with start-up and the pool's settings): every other part of server/ gets it, its transactions and held connections through the context or a factory's parameter, and may import db/client.ts for its types only.",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/(app|startup|database)\\.ts$" },
      to: { path: "^db/client\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "lab-is-a-leaf",
      comment:
        "Only the composition root plugs the failure lab in; nothing on the money path (or any other part of the app) names it. The lab's own page may use its scenarios.",
      severity: "error",
      from: { path: "^(server|db|app)/", pathNot: "^(server/lab/|server/app\\.ts$|app/lab/)" },
      to: { path: "^server/lab/" },
    },
    {
      name: "package-imports-no-app",
      comment: "The middleware package (@exactly-once/trpc) is installable on its own: it imports nothing of the app.",
      severity: "error",
      from: { path: "^packages/trpc/" },
      to: { path: "^(app|server|db|scripts|tests|bench|e2e|examples)/|^[^/]+\\.(ts|js|cjs)$" },
    },
    {
      name: "package-public-surface",
      comment:
        "The app uses the package by its name only, through its entry points (., ./client, ./drizzle: the exports map). Its own integration tests (tests/idempotency/) may reach inside.",
      severity: "error",
      from: { pathNot: "^(packages/trpc/|tests/idempotency/)" },
      to: { path: "^packages/trpc/", pathNot: "^packages/trpc/dist/(index|drizzle|client/index)\\.(js|d\\.ts)$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|\\.next|\\.data|packages/[^/]+/dist)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs"],
    },
  },
};
