/**
 * `@exactly-once/trpc/client`: the browser's side. A link that retries
 * idempotent mutations with the same key, the header it sends, and a store
 * that keeps one key per intent across reloads and tabs. Imports nothing of
 * the server side.
 */
export { idempotencyHeaders, idempotencyLink, type Attempt, type AttemptResult, type IdempotencyLinkOptions } from "./link.js";
export { createIntentStore, signatureOf, type InFlight, type StoredIntent } from "./intent.js";
