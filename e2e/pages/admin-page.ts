/**
 * The admin dashboard (/admin) and a key's page (/admin/keys/{tenant}/{key}):
 * the sign-in form, the counts, the filters, the keys table and the actions.
 */
import type { BrowserContext, Locator, Page } from "@playwright/test";
import { DEMO_OPERATOR } from "../../server/env-schema";
import { DEMO_ADMIN_PASSWORD } from "../../server/env-schema";

/** What the e2e server runs with: the run command's documented demo password unless the environment sets one. */
export const ADMIN_PASSWORD = process.env.ADMIN_PASSWORD ?? DEMO_ADMIN_PASSWORD;

/**
 * The id of the admin session a browser holds: the cookie is
 * `v1.<base64url JSON {sid, iat, exp}>.<signature>` (server/admin/session.ts).
 */
export async function adminSessionId(context: BrowserContext): Promise<string> {
  const cookie = (await context.cookies()).find((c) => c.name === "eo_admin");
  if (!cookie) throw new Error("this browser holds no admin session");
  return (JSON.parse(Buffer.from(cookie.value.split(".")[1]!, "base64url").toString("utf8")) as { sid: string }).sid;
}

/** The table's columns, in order. */
const COLUMNS = ["tenant", "key", "procedure", "state", "lease", "hash", "status", "created", "expires", "replays", "lastReplay"] as const;
type Column = (typeof COLUMNS)[number];

export type DashboardFilters = { tenant?: string; state?: string; q?: string; stale?: boolean; expired?: boolean };

export class AdminPage {
  readonly signInHeading: Locator;
  readonly operator: Locator;
  readonly password: Locator;
  readonly signInButton: Locator;
  readonly heading: Locator;
  readonly keysTable: Locator;
  /** Body rows only: the header row holds column headers, not cells. */
  readonly keyRows: Locator;
  readonly stateFilter: Locator;
  readonly tenantFilter: Locator;
  readonly procedureFilter: Locator;
  readonly keySearch: Locator;
  readonly staleOnly: Locator;
  readonly expiredOnly: Locator;
  /** The health strip: this instance's metrics as rates over the last five minutes. */
  readonly health: Locator;

  constructor(readonly page: Page) {
    this.signInHeading = page.getByRole("heading", { level: 1, name: "Admin sign-in" });
    this.operator = page.getByLabel("Operator");
    this.password = page.getByLabel("Password");
    this.signInButton = page.getByRole("button", { name: "Sign in" });
    this.heading = page.getByRole("heading", { level: 1, name: "Idempotency keys" });
    this.keysTable = page.getByRole("region", { name: "Keys" }).getByRole("table");
    this.keyRows = this.keysTable.getByRole("row").filter({ has: page.getByRole("cell") });
    const search = page.getByRole("search", { name: "Filter keys" });
    this.stateFilter = search.getByLabel("State");
    this.tenantFilter = search.getByLabel("Tenant id");
    this.procedureFilter = search.getByLabel("Procedure");
    this.keySearch = search.getByLabel("Key starts with");
    this.staleOnly = search.getByLabel("Stale only");
    this.expiredOnly = search.getByLabel("Expired only");
    this.health = page.getByRole("region", { name: /^Health/ });
  }

  /** One tile of the health strip, by its label. */
  healthTile(label: string): Locator {
    return this.health.getByRole("listitem").filter({ hasText: label });
  }

  async goto(filters: DashboardFilters = {}): Promise<void> {
    const params = new URLSearchParams();
    if (filters.tenant) params.set("tenant", filters.tenant);
    if (filters.state) params.set("state", filters.state);
    if (filters.q) params.set("q", filters.q);
    if (filters.stale) params.set("stale", "1");
    if (filters.expired) params.set("expired", "1");
    const query = params.toString();
    await this.page.goto(query ? `/admin?${query}` : "/admin");
  }

  /** As the demo operator by default, named: a test may add operators, after which the name may not be left out. */
  async signIn(password = ADMIN_PASSWORD, operator = DEMO_OPERATOR): Promise<void> {
    await this.operator.fill(operator);
    await this.password.fill(password);
    await this.signInButton.click();
  }

  /** Applies the text filters the way a person does: type, then Enter. */
  async search(field: Locator, text: string): Promise<void> {
    await field.fill(text);
    await field.press("Enter");
  }

  /** The row of the key named exactly `key`. */
  rowFor(key: string): Locator {
    return this.keyRows.filter({ has: this.page.getByRole("link", { name: key, exact: true }) });
  }

  cell(key: string, column: Column): Locator {
    return this.rowFor(key).getByRole("cell").nth(COLUMNS.indexOf(column));
  }

  /** The count tile of a state ("In progress", "Stale", "Completed", ...). */
  count(label: string): Locator {
    return this.page.getByRole("region", { name: "Keys by state" }).getByRole("button", { name: new RegExp(`${label}$`) });
  }
}

export class AdminKeyPage {
  readonly requestHash: Locator;
  readonly canonicalRequest: Locator;
  readonly storedResponse: Locator;
  readonly fields: Locator;
  readonly timeline: Locator;
  readonly ledgerTable: Locator;
  readonly chargesTable: Locator;
  readonly recoverButton: Locator;
  readonly confirmRecover: Locator;
  readonly auditLog: Locator;

  constructor(readonly page: Page) {
    this.requestHash = page.getByTestId("request-hash");
    this.canonicalRequest = page.getByTestId("canonical-request");
    this.storedResponse = page.getByTestId("stored-response");
    this.fields = page.getByRole("region", { name: "Fields" });
    this.timeline = page.getByRole("region", { name: "Timeline" }).getByRole("list");
    this.ledgerTable = page.getByRole("region", { name: "Ledger entries" }).getByRole("table");
    this.chargesTable = page.getByRole("region", { name: "Provider charges" }).getByRole("table");
    this.recoverButton = page.getByRole("button", { name: "Recover lock…" });
    this.confirmRecover = page.getByRole("button", { name: "Recover now" });
    this.auditLog = page.getByRole("region", { name: "Audit log" });
  }

  async goto(tenantId: string, key: string): Promise<void> {
    await this.page.goto(`/admin/keys/${encodeURIComponent(tenantId)}/${encodeURIComponent(key)}`);
  }

  /** The value next to a field's label ("State", "Replays", ...). */
  field(label: string): Locator {
    const term = this.page.getByRole("term").filter({ hasText: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) });
    return this.fields.locator("div").filter({ has: term }).getByRole("definition");
  }

  /** Ledger body rows: the header row holds column headers, not cells. */
  ledgerRows(): Locator {
    return this.ledgerTable.getByRole("row").filter({ has: this.page.getByRole("cell") });
  }
}
