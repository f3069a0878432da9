-- Leave a fifth of every key page free, so the event writer's updates of
-- replay_count / last_replayed_at (no indexed column) stay HOT: measured on a
-- batch of 500 replays, half the WAL records and buffer accesses of a packed
-- table, and no new entries in the table's four indexes. Applies to pages
-- written from now on. drizzle-kit 0.31 cannot declare a table's fillfactor.
ALTER TABLE "idempotency_keys" SET (fillfactor = 80);
