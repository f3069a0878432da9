/**
 * The lab at the HTTP edge, where the composition root wraps the app's
 * handlers with it: a request carrying Lab-Run, in demo mode, runs inside its
 * lab run (so its steps are recorded and its switches apply), and the
 * "answer lost" simulation drops the answer here, after the handler has
 * committed everything. Without demo mode the header means nothing, and in
 * demo mode it counts only on the one call a run makes: the twin's payment
 * for a naive run, the storefront checkout under the run's own key for a
 * protected one. On anything else (a tenant's payments.create, a batch) it
 * is ignored, so no one can aim a run's simulated crash at other requests.
 */
import type { Sql } from "postgres";
import { REPLAYED_HEADER } from "@exactly-once/trpc";
import { countRequest, deferStep, findRun, Lane, recordStep, stepsWritten, takeFault, withinRun, type LabRun } from "./runs";
import { LAB_REQUEST_HEADER, LAB_RUN_HEADER, labKeyOf, LabTarget } from "./scenarios";

/** The one call of `run` a request may be: anything else leaves the run alone. */
function callOfRun(run: LabRun, procedures: string[], req: Request): boolean {
  if (procedures.length !== 1) return false;
  if (run.target === LabTarget.Naive) return procedures[0] === "lab.naivePay";
  return procedures[0] === "checkout.pay" && req.headers.get("idempotency-key") === labKeyOf(run.id);
}

type Handler = (req: Request) => Promise<Response>;

/** A key in a label: the caller chooses it, so only its start is drawn. */
const KEY_LABEL_CHARS = 40;
const cutKey = (key: string) => (key.length > KEY_LABEL_CHARS ? `${key.slice(0, KEY_LABEL_CHARS)}…` : key);

/** A checkout's answer as the shopper would read it, its status kept in brackets. */
function answerWords(status: number): string {
  if (status >= 200 && status < 300) return `paid (${status})`;
  if (status === 402) return `declined (${status})`;
  if (status === 409) return `busy: try again in a moment (${status})`;
  if (status >= 500) return `not paid yet: try again later (${status})`;
  return `refused (${status})`;
}

/** A 4xx other than a decline (402, answered after the provider was asked) is refused before the twin wrote anything. */
const refusedWithoutEffect = (status: number) => status >= 400 && status < 500 && status !== 402;

/** The tRPC endpoint's edge: `procedures` are the ones the URL names. */
export async function throughLab(sql: () => Sql, req: Request, procedures: string[], handle: Handler): Promise<Response> {
  // The request is drawn when it arrived, not after its run was looked up: two sent at once keep their order under load.
  const arrived = performance.now();
  const id = req.headers.get(LAB_RUN_HEADER);
  const found = id ? await findRun(sql(), id) : undefined;
  const run = found && callOfRun(found, procedures, req) ? found : undefined;
  if (!run) return handle(req);
  return withinRun(run, async () => {
    // The browser numbers its own requests (Lab-Request), so its attempts list and the diagram say "#n" of the same request.
    const numbered = Number(req.headers.get(LAB_REQUEST_HEADER));
    const n = Number.isInteger(numbered) && numbered >= 1 && numbered <= 999 ? numbered : await countRequest(run);
    const procedure = procedures[0]!;
    const key = req.headers.get("idempotency-key");
    const label = {
      plain: `request #${n}: pay${key ? ", with the purchase's key" : ", with no key"}`,
      technical: `request #${n}: ${procedure}${key ? ` with key ${cutKey(key)}` : " without a key"}`,
    };
    // Drawn at its arrival, before the steps the call records while it runs. A twin's call it refused (its run's
    // calls used up, bad input) did nothing, and is not drawn: otherwise any caller could grow the run's record.
    const arrival = deferStep(run, Lane.Browser, Lane.App, label, arrived);
    if (run.target !== LabTarget.Naive) arrival.flush();
    const response = await handle(req);
    if (run.target === LabTarget.Naive && refusedWithoutEffect(response.status)) {
      arrival.drop();
      return response;
    }
    arrival.flush();
    if (await takeFault("loseAnswer")) {
      // Everything is committed; only the answer goes missing, as when a connection drops on its way back.
      await response.arrayBuffer();
      recordStep(Lane.App, Lane.Browser, {
        plain: `answer to #${n} (${answerWords(response.status)}) lost on the way (simulated): the browser never hears it`,
        technical: `answer to #${n} (${response.status}) lost on the way (simulated)`,
      });
      await stepsWritten(run.id);
      return droppedAnswer();
    }
    const replayed = response.headers.get(REPLAYED_HEADER) === "true";
    recordStep(Lane.App, Lane.Browser, {
      plain: `answer to #${n}: ${answerWords(response.status)}${replayed ? ", the saved answer sent again" : ""}`,
      technical: `answer to #${n}: ${response.status}${replayed ? " (replayed)" : ""}`,
    });
    // Any instance may build the report next: the steps are written before the browser hears back.
    await stepsWritten(run.id);
    return response;
  });
}

const WEBHOOK_PATH = "/api/v1/webhooks/psp";
const LAB_EVENT_PREFIX = "evt_lab_";

/**
 * The REST edge: a webhook delivery reaches the app in a request of the
 * provider's, not the run's, so the lab's event ids name their run. Once the
 * receiver has answered (200: it accepted the body, so it is small), the
 * delivery is drawn into that run, applied or recognised as a duplicate.
 */
export async function webhookThroughLab(sql: () => Sql, req: Request, handle: Handler): Promise<Response> {
  if (req.method !== "POST" || new URL(req.url).pathname !== WEBHOOK_PATH) return handle(req);
  const copy = req.clone();
  const response = await handle(req);
  const id = response.status === 200 ? eventIdOf(await copy.text()) : (void copy.body?.cancel(), undefined);
  if (!id?.startsWith(LAB_EVENT_PREFIX)) return response;
  const { duplicate } = (await response.clone().json()) as { duplicate?: boolean };
  const run = { id: id.slice(LAB_EVENT_PREFIX.length), sql: sql() };
  const [plain, outcome] = duplicate
    ? ["the shop knows this notice already: nothing is done twice", "recognised as a duplicate: nothing applied"]
    : ["the shop applies the refund notice and keeps its id", "applied once, its id recorded"];
  recordStep(Lane.Provider, Lane.App, { plain, technical: `webhook ${id} ${outcome}` }, run);
  await stepsWritten(run.id);
  return response;
}

function eventIdOf(body: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { id?: unknown } | null)?.id;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An answer that breaks off after its first byte. A connection that drops
 * before any byte of the answer is one Chromium resends the request on by
 * itself (a reused keep-alive connection), so the page never saw the loss
 * and its list missed the retry the diagram drew; once the answer has
 * started, the loss is the page's to handle, as on a real network. The break
 * is an AbortError, what a client gone away raises: Next.js closes the
 * connection without logging a stack for it.
 */
function droppedAnswer(): Response {
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(new TextEncoder().encode("{"));
        return;
      }
      // Long enough for the first byte to leave before the connection is destroyed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      controller.error(new DOMException("lab: answer dropped (simulated)", "AbortError"));
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
}
