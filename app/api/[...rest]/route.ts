import { handleRest } from "@/server/app";
import { instrument } from "@/server/observability";

export const dynamic = "force-dynamic";

const handler = instrument.http("/api/[...rest]", handleRest);

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
