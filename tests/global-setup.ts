/** Vitest global setup: one fresh, migrated PostgreSQL for the whole run. */
import type { TestProject } from "vitest/node";
import { createFreshDatabase } from "./support/database";

export default async function setup(project: TestProject) {
  const db = await createFreshDatabase("vitest");
  // Workers are started after this and inherit the environment.
  process.env.DATABASE_URL = db.url;
  project.provide("databaseUrl", db.url);
  return () => db.dispose();
}

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}
