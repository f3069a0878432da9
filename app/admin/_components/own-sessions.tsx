"use client";
/**
 * The signed-in operator's own sessions, one per browser they signed in
 * from, each with a way to end it: a cookie left on a lost laptop stops
 * working at once instead of at its expiry. The ids are the ones the audit
 * log names, so an action can be traced to the browser that took it.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../_trpc/client";
import { utc } from "./format";
import { QueryError } from "./query-error";

export function OwnSessions() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const sessions = useQuery(trpc.admin.sessions.list.queryOptions(undefined, { refetchInterval: 30_000 }));
  const revoke = useMutation(
    trpc.admin.sessions.revoke.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.admin.sessions.list.queryKey() }),
    }),
  );
  const rows = sessions.data ?? [];
  return (
    <section aria-labelledby="sessions-heading">
      <h2 id="sessions-heading">Your sessions</h2>
      {sessions.error && <QueryError error={sessions.error} />}
      {revoke.error && <QueryError error={revoke.error} />}
      {rows.length === 0 ? (
        <p className="muted">{sessions.isPending ? "Loading…" : "No sessions."}</p>
      ) : (
        // One session at a time, each with its End button: on a phone a card per session (globals.css, `.cards`).
        <table className="table cards">
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Signed in</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span className="visually-hidden">Action</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((s) => (
              <tr key={s.id}>
                <td className="mono small">{s.id}</td>
                <td className="nowrap" data-label="Signed in">
                  <time dateTime={s.createdAt}>{utc(s.createdAt)}</time>
                </td>
                <td className="nowrap" data-label="Expires">
                  <time dateTime={s.expiresAt}>{utc(s.expiresAt)}</time>
                </td>
                <td>
                  {s.current ? (
                    <span className="muted">This browser</span>
                  ) : (
                    <button
                      type="button"
                      className="secondary"
                      disabled={revoke.isPending}
                      onClick={() => revoke.mutate({ id: s.id })}
                      aria-label={`End session ${s.id}`}
                    >
                      End
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
