-- The key table, as the package has had it since 0.1.0. Every statement is
-- "if not exists": on a database that already has the table (an app that
-- created it with its own migrations before it used the package) this
-- migration changes nothing. Names are unqualified: migrate() runs it with
-- the search_path set to the schema it was given.
create table if not exists idempotency_keys (
  tenant_id text not null,
  key text not null,
  procedure text not null,
  fingerprint text not null,
  request text not null,
  state text default 'in_progress' not null,
  fence bigint default 1 not null,
  locked_until timestamp with time zone,
  recovery_point text default 'started' not null,
  recovery_data jsonb,
  response_status integer,
  response_body text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  completed_at timestamp with time zone,
  expires_at timestamp with time zone not null,
  replay_count integer default 0 not null,
  last_replayed_at timestamp with time zone,
  completer_attempts integer default 0 not null,
  completer_next_at timestamp with time zone,
  completer_error text,
  completer_gave_up_at timestamp with time zone,
  completed_by text,
  constraint idempotency_keys_tenant_id_key_pk primary key (tenant_id, key),
  constraint idempotency_keys_state_check check (state in ('in_progress', 'completed', 'failed')),
  constraint idempotency_keys_result_check check ((state = 'in_progress') = (response_status is null))
)
-- Room on every page for the batched replay-count updates, so they stay HOT.
with (fillfactor = 80);

create index if not exists idempotency_keys_expires_at_idx on idempotency_keys (expires_at);
create index if not exists idempotency_keys_tenant_state_created_idx on idempotency_keys (tenant_id, state, created_at, key);
create index if not exists idempotency_keys_state_created_idx on idempotency_keys (state, created_at, key);
-- The completer's due-key query: only in-progress keys, in the order their leases ran out.
create index if not exists idempotency_keys_due_idx on idempotency_keys (locked_until) where state = 'in_progress';
