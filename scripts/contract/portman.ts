/**
 * Portman's contract tests, generated from the document: for every operation
 * the success status, the content type, a JSON body, the body against the
 * response schema and the declared headers. The configuration below only
 * supplies what a document cannot: the tenant's token, a fresh key per
 * idempotent request, the ids earlier answers gave (chained with
 * assignVariables and overwrites), and the webhook's signature. Newman runs
 * the collection against the app; its JSON report gives the counts.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { bin, run } from "./processes";

export type PortmanOptions = {
  document: string;
  baseUrl: string;
  token: string;
  webhookSecret: string;
  out: string;
  log: (line: string) => void;
};
export type PortmanResult = { requests: number; assertions: number; failed: number };

const assign = (operationId: string, name: string, responseBodyProp = "id") => ({
  openApiOperationId: operationId,
  collectionVariables: [{ responseBodyProp, name }],
});
const pathId = (operationIds: string[], variable: string) => ({
  openApiOperationIds: operationIds,
  overwriteRequestPathVariables: [{ key: "id", value: `{{${variable}}}` }],
});

/** Void needs an authorisation of its own: the one created first has been captured by then. */
const freshAuthorisation = `
pm.sendRequest({
  url: pm.collectionVariables.get("baseUrl") + "/v1/payments",
  method: "POST",
  header: { "Authorization": "Bearer " + pm.collectionVariables.get("token"), "Content-Type": "application/json", "Idempotency-Key": pm.variables.replaceIn("{{$guid}}") },
  body: { mode: "raw", raw: JSON.stringify({ amount: "10.00", currency: "EUR", destination: "acct_test_123", capture: false }) },
}, (err, res) => pm.collectionVariables.set("voidPaymentId", res.json().id));`;

/** The operation's own security (the apiKey scheme Psp-Signature) sends {{apiKey}}: the HMAC of the body about to go out. */
const signature = `
pm.collectionVariables.set("apiKey", CryptoJS.HmacSHA256(pm.request.body.raw, pm.collectionVariables.get("webhookSecret")).toString(CryptoJS.enc.Hex));`;

function config(o: PortmanOptions) {
  const idempotent = [
    "payments_create",
    "payments_capture",
    "payments_void",
    "payments_refund",
    "accounts_create",
    "accounts_deposit",
    "accounts_withdraw",
    "coupons_create",
    "orders_create",
  ];
  return {
    version: 1.0,
    tests: {
      contractTests: [
        {
          openApiOperation: "*::/*",
          statusSuccess: { enabled: true },
          contentType: { enabled: true },
          jsonBody: { enabled: true },
          schemaValidation: { enabled: true },
          headersPresent: { enabled: true },
        },
      ],
    },
    assignVariables: [
      assign("payments_create", "paymentId"),
      assign("accounts_create", "accountId"),
      assign("accounts_deposit", "depositId"),
      assign("accounts_withdraw", "withdrawalId"),
      assign("orders_create", "orderId"),
    ],
    overwrites: [
      // An authorisation, so capture (and then refund) have one to act on.
      { openApiOperationId: "payments_create", overwriteRequestBody: [{ key: "capture", value: false }] },
      { openApiOperationIds: idempotent, overwriteRequestHeaders: [{ key: "Idempotency-Key", value: "{{$guid}}" }] },
      pathId(["payments_get", "payments_attempts", "payments_capture", "payments_refund"], "paymentId"),
      pathId(["payments_void"], "voidPaymentId"),
      pathId(["accounts_get", "accounts_deposit", "accounts_withdraw", "accounts_movements"], "accountId"),
      pathId(["accounts_getDeposit"], "depositId"),
      pathId(["accounts_getWithdrawal"], "withdrawalId"),
      pathId(["orders_get"], "orderId"),
    ],
    operationPreRequestScripts: [
      { openApiOperationId: "payments_void", scripts: [freshAuthorisation] },
      { openApiOperationId: "webhooks_psp", scripts: [signature] },
    ],
    globals: {
      collectionVariables: { baseUrl: o.baseUrl, token: o.token, webhookSecret: o.webhookSecret },
      securityOverwrites: { bearer: { token: "{{token}}" } },
    },
  };
}

export async function runPortman(o: PortmanOptions): Promise<PortmanResult> {
  const configFile = path.join(o.out, "portman-config.json");
  const collection = path.join(o.out, "portman-collection.json");
  const report = path.join(o.out, "newman-report.json");
  writeFileSync(configFile, JSON.stringify(config(o), null, 2));
  const generated = await run(
    bin("portman"),
    [
      "--local",
      o.document,
      "--baseUrl",
      o.baseUrl,
      "--portmanConfigFile",
      configFile,
      "--output",
      collection,
      "--includeTests",
      "--syncPostmanCollectionIds",
      "false",
    ],
    { cwd: o.out, stdio: ["ignore", "ignore", "inherit"] },
  );
  if (generated !== 0) throw new Error(`portman exited with ${generated}`);
  await run(bin("newman"), ["run", collection, "--reporters", "cli,json", "--reporter-json-export", report, "--bail", "false"], {
    cwd: o.out,
  });
  type Count = { total: number; failed: number };
  const { stats } = (
    JSON.parse(readFileSync(report, "utf8")) as {
      run: { stats: Record<"requests" | "assertions" | "testScripts" | "prerequestScripts", Count> };
    }
  ).run;
  const result = {
    requests: stats.requests.total,
    assertions: stats.assertions.total,
    failed: stats.assertions.failed + stats.requests.failed + stats.testScripts.failed + stats.prerequestScripts.failed,
  };
  o.log(`portman + newman: ${result.requests} requests, ${result.assertions} assertions, ${result.failed} failed`);
  return result;
}
