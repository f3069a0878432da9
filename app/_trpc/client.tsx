"use client";
/**
 * The tRPC React client for the app's own pages: TanStack Query underneath,
 * `useTRPC()` for query and mutation options. Queries are batched; mutations
 * go one per request, so a per-call header (an Idempotency-Key) never ends
 * up shared by a batch. Cookies ride along: the admin session is one.
 */
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, httpLink, splitLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import type { AppRouter } from "@/server/app";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

const TRPC_URL = "/api/trpc";

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
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [splitLink({ condition: (op) => op.type === "mutation", true: httpLink({ url: TRPC_URL }), false: httpBatchLink({ url: TRPC_URL }) })],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
