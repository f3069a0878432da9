/**
 * The one logger: JSON lines on standard error, so that command-line tools keep
 * standard output for their result. Secrets never reach it (see `redact`).
 * The composition root sets its level from LOG_LEVEL when it builds the process's app.
 */
import pino from "pino";
import { traceFields } from "./observability/log";

export const logger = pino(
  {
    base: undefined,
    // The trace a line belongs to, so a request's lines and its spans find each other.
    mixin: traceFields,
    redact: ["authorization", "token", "*.authorization", "*.token", "headers.authorization", "password", "*.password"],
  },
  pino.destination({ fd: 2, sync: false }),
);
export type Logger = typeof logger;
