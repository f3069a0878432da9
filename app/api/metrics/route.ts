import { app } from "@/server/app";

export const dynamic = "force-dynamic";

export const GET = (req: Request) => app.metrics(req);
