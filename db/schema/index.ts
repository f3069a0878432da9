/**
 * Every table of the app, for drizzle-kit and for queries. The idempotency
 * key table is the middleware package's (@exactly-once/trpc, which migrates
 * it): drizzle.config.ts reads its definition beside this one, and queries
 * take it from `@exactly-once/trpc/drizzle`.
 */
export * from "./tenants";
export * from "./products";
export * from "./events";
export * from "./payments";
export * from "./admin";
export * from "./lab";
