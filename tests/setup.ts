/** Per test file: the app's pool on the run's database, with the demo catalog in place. */
import { afterAll, beforeAll, inject } from "vitest";
import { closeDatabase, openDatabase } from "../db/client";
import { seedDemo } from "../db/seed";

beforeAll(async () => {
  const { db } = openDatabase(inject("databaseUrl"), { max: 30 });
  await seedDemo(db);
});

afterAll(async () => {
  await closeDatabase();
});
