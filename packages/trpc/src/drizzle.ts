/**
 * `@exactly-once/trpc/drizzle`: the key table for apps that use Drizzle, to
 * query keys or to let drizzle-kit know the table exists. The package's
 * `migrate` creates it; drizzle-kit must not generate it a second time.
 */
export { idempotencyKeys, type IdempotencyRecord } from "./schema.js";
