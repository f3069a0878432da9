/**
 * The lab at the HTTP edge: a request carrying Lab-Run, in demo mode, runs
 * inside its lab run (so its steps are recorded and its switches apply), and
 * the "answer lost" simulation drops the answer here, after the handler has
 * committed everything. Without demo mode the header means nothing.
 */
import { isDemoMode } from "../env";
import { REPLAYED_HEADER } from "../idempotency";
import { countRequest, findRun, Lane, recordStep, stepsWritten, takeFault, withinRun } from "./runs";
import { LAB_RUN_HEADER } from "./scenarios";

export async function throughLab(req: Request, handle: (req: Request) => Promise<Response>): Promise<Response> {
  const id = req.headers.get(LAB_RUN_HEADER);
  const run = isDemoMode() && id ? await findRun(id) : undefined;
  if (!run) return handle(req);
  return withinRun(run, async () => {
    const n = await countRequest(run);
    const procedure = new URL(req.url).pathname.split("/").pop() ?? "";
    const key = req.headers.get("idempotency-key");
    recordStep(Lane.Browser, Lane.App, `request #${n}: ${procedure}${key ? ` with key ${key}` : " without a key"}`);
    const response = await handle(req);
    if (await takeFault("loseAnswer")) {
      // Everything is committed; only the answer goes missing, as when a connection drops on its way back.
      await response.arrayBuffer();
      recordStep(Lane.App, Lane.Browser, `answer to #${n} (${response.status}) lost on the way (simulated)`);
      await stepsWritten(run.id);
      return new Response(new ReadableStream({ start: (controller) => controller.error(new Error("lab: answer dropped")) }), { status: 200 });
    }
    const replayed = response.headers.get(REPLAYED_HEADER) === "true";
    recordStep(Lane.App, Lane.Browser, `answer to #${n}: ${response.status}${replayed ? " (replayed)" : ""}`);
    // Any instance may build the report next: the steps are written before the browser hears back.
    await stepsWritten(run.id);
    return response;
  });
}
