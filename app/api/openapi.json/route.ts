import { app } from "@/server/app";

export const dynamic = "force-dynamic";

export function GET() {
  return Response.json(app.openApiDocument());
}
