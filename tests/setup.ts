/** Per test file: the app's pool on the run's database, with the demo catalog in place. */
import { afterAll, beforeAll, inject } from "vitest";
import { closeDatabase } from "../db/client";
import { seedDemo } from "../db/seed";
import { openAppDatabase } from "../server/database";
import { env } from "../server/env";

beforeAll(async () => {
  const { db } = openAppDatabase(inject("databaseUrl"), { max: 30, pooled: env.DATABASE_POOLED });
  await seedDemo(db);
});

afterAll(async () => {
  await closeDatabase();
});
