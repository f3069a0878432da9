/**
 * What the Playwright config, the e2e server and the fixtures must agree on:
 * the port the app under test listens on and where the server leaves the
 * URL of the run's fresh database for the test workers.
 */
import path from "node:path";

/** Fixed and away from 3000, so a developer's own `npm start` never collides with a run. */
export const E2E_PORT = Number(process.env.E2E_PORT ?? 3210);

export const BASE_URL = `http://127.0.0.1:${E2E_PORT}`;

export const STATE_DIR = path.join(import.meta.dirname, "..", ".state");

/**
 * Written by `e2e/serve.ts` before the app starts, removed when the run's
 * database is gone. One per port, so runs on different ports side by side
 * never read each other's database.
 */
export const DATABASE_URL_FILE = path.join(STATE_DIR, `database-url-${E2E_PORT}`);

/** The provider stand-in's URL for the run's app, written beside the database's, so specs can count charges at the provider itself. */
export const PSP_URL_FILE = path.join(STATE_DIR, `psp-url-${E2E_PORT}`);
