/**
 * A problem `type` URI, dereferenced: the page that explains it. The type
 * itself never moves (clients match on it, stored refusals replay it), so
 * it answers with a permanent redirect to its page under /docs.
 */
import { isProblemSlug, problemOf, problemPage } from "@/server/problems";
import { problemResponse } from "@/server/rest/respond";

export async function GET(_req: Request, { params }: { params: Promise<{ slug: string }> }): Promise<Response> {
  const { slug } = await params;
  if (!isProblemSlug(slug)) return problemResponse(problemOf("not-found", "No problem type of that name."));
  return new Response(null, { status: 308, headers: { location: problemPage(slug) } });
}
