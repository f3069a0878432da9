/**
 * Every table of the app, for drizzle-kit and for queries. The middleware's
 * own table (server/idempotency/schema.ts) is its own: drizzle.config.ts
 * reads it beside this one, and the data layer never imports the server.
 */
export * from "./tenants";
export * from "./products";
export * from "./events";
export * from "./payments";
export * from "./admin";
export * from "./lab";
