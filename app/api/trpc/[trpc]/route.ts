/** The tRPC endpoint: the app's router behind its front door (server/edge/trpc-endpoint.ts). */
import { app } from "@/server/app";

export const dynamic = "force-dynamic";

export const GET = (req: Request) => app.trpc.GET(req);
export const POST = (req: Request) => app.trpc.POST(req);
