/** Every table, for drizzle-kit and for queries. */
export * from "./tenants";
export * from "./products";
export * from "../../server/idempotency/schema";
export * from "./events";
export * from "./payments";
export * from "./admin";
export * from "./lab";
