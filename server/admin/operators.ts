/**
 * Operator accounts: a name, a role and a scrypt hash of the password
 * (memory-hard, so a stolen table is slow to guess from). Created with
 * `npm run operator -- add NAME --role operator`; demo mode adds the one
 * demo operator, labelled as such, with the documented demo password, and
 * only demo mode lets it sign in, so a database once used for a demo never
 * carries a known password into a deployment.
 */
import { randomBytes } from "node:crypto";
import { asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { adminOperators, OperatorRole } from "../../db/schema";
import { DEMO_OPERATOR, type Env } from "../env-schema";
import { hashPassword, passwordMatchesHash } from "./password";

export { OperatorRole };

/** The operator demo mode signs in, under the demo password. */
export { DEMO_OPERATOR };

export type Operator = { name: string; role: OperatorRole; demo: boolean };

export const OPERATOR_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** A hash of nothing anyone types, checked when the operator does not exist, so that case costs the same time. */
let decoy: Promise<string> | undefined;

/** The shortest operator password accepted. */
export const MIN_OPERATOR_PASSWORD = 12;

/** Why a password cannot be an operator's, or undefined when it can: twelve spaces are not a password. */
export function operatorPasswordDefect(password: string): string | undefined {
  if (password.length < MIN_OPERATOR_PASSWORD) return `The password needs at least ${MIN_OPERATOR_PASSWORD} characters.`;
  if (password.trim() === "") return "The password must not be only whitespace.";
  return undefined;
}

export async function addOperator(db: Db, name: string, role: OperatorRole, password: string): Promise<Operator> {
  const defect = operatorPasswordDefect(password);
  if (defect) throw new Error(defect);
  const [row] = await db
    .insert(adminOperators)
    .values({ name, role, passwordHash: await hashPassword(password) })
    .onConflictDoNothing()
    .returning({ name: adminOperators.name, role: adminOperators.role, demo: adminOperators.demo });
  if (!row) throw new Error(`An operator named ${name} exists already.`);
  return row;
}

export async function removeOperator(db: Db, name: string): Promise<boolean> {
  const rows = await db.delete(adminOperators).where(eq(adminOperators.name, name)).returning({ name: adminOperators.name });
  return rows.length > 0;
}

export const listOperators = (db: Db): Promise<Operator[]> =>
  db
    .select({ name: adminOperators.name, role: adminOperators.role, demo: adminOperators.demo })
    .from(adminOperators)
    .orderBy(asc(adminOperators.name));

/** Demo mode and its password decide whether the demo operator exists and may sign in. */
export type OperatorSettings = Pick<Env, "DEMO_MODE" | "ADMIN_PASSWORD">;

/** In demo mode with the demo password: the demo operator exists (created once, by whichever instance comes first). */
export async function ensureDemoOperator(db: Db, settings: OperatorSettings): Promise<void> {
  if (!settings.DEMO_MODE || settings.ADMIN_PASSWORD === undefined) return;
  const [existing] = await db.select({ name: adminOperators.name }).from(adminOperators).where(eq(adminOperators.name, DEMO_OPERATOR));
  if (existing) return;
  await db
    .insert(adminOperators)
    .values({ name: DEMO_OPERATOR, role: OperatorRole.Operator, demo: true, passwordHash: await hashPassword(settings.ADMIN_PASSWORD) })
    .onConflictDoNothing();
}

/** The operators who may sign in now: demo ones only in demo mode. */
const usable = (settings: OperatorSettings) => (operator: Operator) => !operator.demo || settings.DEMO_MODE;

/** The demo operator, when it is the only operator that may sign in: then a sign-in may leave the name out. */
const demoAlone = <T extends Operator>(candidates: T[]): T | undefined =>
  candidates.length === 1 && candidates[0]!.demo ? candidates[0] : undefined;

/** Whether a sign-in may leave the operator name out now (the sign-in form says so only then). */
export async function operatorNameOptional(db: Db, settings: OperatorSettings): Promise<boolean> {
  if (!settings.DEMO_MODE) return false;
  await ensureDemoOperator(db, settings);
  return demoAlone((await listOperators(db)).filter(usable(settings))) !== undefined;
}

/**
 * Who `operator` names, when the password is theirs. Left out, the operator
 * is the demo one, as long as it is the only one that may sign in.
 */
export async function authenticate(
  db: Db,
  settings: OperatorSettings,
  name: string | undefined,
  password: string,
): Promise<Operator | undefined> {
  await ensureDemoOperator(db, settings);
  const rows = await db.select().from(adminOperators);
  const candidates = rows.filter(usable(settings));
  const found = name === undefined ? demoAlone(candidates) : candidates.find((o) => o.name === name);
  if (!found) {
    await passwordMatchesHash(password, await (decoy ??= hashPassword(randomBytes(16).toString("hex"))));
    return undefined;
  }
  return (await passwordMatchesHash(password, found.passwordHash)) ? { name: found.name, role: found.role, demo: found.demo } : undefined;
}

/** The operator of a signed-in session, if it may still sign in. */
export async function operatorNamed(db: Db, settings: OperatorSettings, name: string): Promise<Operator | undefined> {
  const [row] = await db
    .select({ name: adminOperators.name, role: adminOperators.role, demo: adminOperators.demo })
    .from(adminOperators)
    .where(eq(adminOperators.name, name));
  return row && usable(settings)(row) ? row : undefined;
}
