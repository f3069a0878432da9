/** The tRPC endpoint: the app's router behind its front door (server/edge/trpc-endpoint.ts), observed. */
import { appRouter, createContextInner, trpcEdge } from "@/server/app";
import { createTrpcEndpoint } from "@/server/edge/trpc-endpoint";
import { instrument } from "@/server/observability";

export const dynamic = "force-dynamic";

const endpoint = createTrpcEndpoint({ router: appRouter, createContext: createContextInner, edge: trpcEdge });

export const GET = instrument.http("/api/trpc/[trpc]", endpoint.GET);
export const POST = instrument.http("/api/trpc/[trpc]", endpoint.POST);
