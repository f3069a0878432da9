-- The recorded trace (W3C trace context) of the request that took the key:
-- `traceId` of the runtime. Nullable, without a default: adding it rewrites
-- nothing and takes the table's lock only for the catalog change.
-- "if not exists": the app's own migrations may have added it first.
alter table idempotency_keys add column if not exists trace_id text;
