/** Apps of a test's own, for settings the process's app does not have (a provider that is down, demo mode). */
import { database } from "../../db/client";
import { app, createApp, type App } from "../../server/app";
import type { Env } from "../../server/env-schema";

/** The process's settings with `overrides`, on the same pool and event log as the process's app. */
export const appWith = (overrides: Partial<Env>): App =>
  createApp({ settings: { ...app.settings, ...overrides }, pool: database, eventLog: app.eventLog });
