import { app } from "@/server/app";

export const dynamic = "force-dynamic";

const handler = (req: Request) => app.rest(req);

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
