/** Creating tenants and resolving a token to its tenant. */
import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { apiTokens, tenants } from "../../db/schema";
import { newId } from "../ids";
import { hashToken, newToken } from "./tokens";

export async function createTenant(db: Db, name: string, id = newId("ten")) {
  const token = newToken();
  // One statement, so the tenant never exists without its token.
  const tenant = db.$with("tenant").as(db.insert(tenants).values({ id, name }).returning({ id: tenants.id }));
  await db
    .with(tenant)
    .insert(apiTokens)
    .values({ tokenHash: hashToken(token), tenantId: id, prefix: token.slice(0, 8) });
  return { tenant: { id, name }, token };
}

export async function tenantForToken(db: Db, token: string) {
  const [row] = await db
    .select({ id: tenants.id, name: tenants.name })
    .from(apiTokens)
    .innerJoin(tenants, eq(tenants.id, apiTokens.tenantId))
    .where(eq(apiTokens.tokenHash, hashToken(token)))
    .limit(1);
  return row;
}

export async function tenantById(db: Db, id: string) {
  const [row] = await db.select({ id: tenants.id, name: tenants.name }).from(tenants).where(eq(tenants.id, id));
  return row;
}
