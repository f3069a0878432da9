import { handleRest } from "@/server/app";

export const dynamic = "force-dynamic";

const handler = handleRest;

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
