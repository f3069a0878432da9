/** Every table, for drizzle-kit and for queries. */
export * from "./tenants";
export * from "./products";
export * from "../../server/idempotency/schema";
