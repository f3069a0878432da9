import { openApiDocument } from "@/server/rest/openapi";

export const dynamic = "force-dynamic";

export function GET() {
  return Response.json(openApiDocument());
}
