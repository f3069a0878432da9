"use client";
/**
 * The one tRPC client of the app's own pages. `createAppClient` is the
 * vanilla client (the checkout uses it directly): queries are batched;
 * mutations go one per request through the idempotency link, so a per-call
 * Idempotency-Key is retried with the same key and never shared by a batch.
 * `TRPCReactProvider` puts the same client under TanStack Query for
 * `useTRPC()` (the admin). Cookies ride along: the admin session is one.
 */
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, httpLink, splitLink, type TRPCLink } from "@trpc/client";
import { observable } from "@trpc/server/observable";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import { idempotencyHeaders, idempotencyLink, type IdempotencyLinkOptions } from "@exactly-once/trpc/client";
import type { AppRouter } from "@/server/app";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

const TRPC_URL = "/api/trpc";

/**
 * What one call may add in its `context`: headers for its request (the lab
 * tags requests with its run), and a callback told of each HTTP response,
 * success or error (the lab shows statuses, Retry-After, replays).
 */
export type CallContext = { headers?: Record<string, string>; onResponse?: (response: Response) => void };

const responseOf = (meta: unknown) => (meta as { response?: Response } | undefined)?.response;

function responseLink(): TRPCLink<AppRouter> {
  return () =>
    ({ op, next }) =>
      observable((observer) => {
        const tell = (response: Response | undefined) => response && (op.context as CallContext).onResponse?.(response);
        return next(op).subscribe({
          next(value) {
            tell(responseOf(value.context));
            observer.next(value);
          },
          error(error) {
            tell(responseOf(error.meta));
            observer.error(error);
          },
          complete() {
            observer.complete();
          },
        });
      });
}

/** `onAttempt`: told of every attempt of an idempotent mutation (the checkout shows them). */
export function createAppClient(options: Pick<IdempotencyLinkOptions, "onAttempt"> = {}) {
  return createTRPCClient<AppRouter>({
    links: [
      idempotencyLink(options),
      responseLink(),
      splitLink({
        condition: (op) => op.type === "mutation",
        true: httpLink({ url: TRPC_URL, headers: ({ op }) => ({ ...idempotencyHeaders({ op }), ...(op.context as CallContext).headers }) }),
        false: httpBatchLink({ url: TRPC_URL }),
      }),
    ],
  });
}

function makeQueryClient() {
  return new QueryClient({
    defaultOptions: {
      // A failed admin call is usually a signed-out session: retrying would not help.
      queries: { staleTime: 1_000, retry: false },
    },
  });
}

export function TRPCReactProvider({ children }: { children: ReactNode }) {
  const [queryClient] = useState(makeQueryClient);
  const [trpcClient] = useState(() => createAppClient());
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
