/**
 * The one logger: JSON lines on standard error, so that command-line tools keep
 * standard output for their result. Secrets never reach it (see `redact`).
 */
import pino from "pino";
import { env } from "./env";

export const logger = pino(
  {
    level: env.LOG_LEVEL,
    base: undefined,
    redact: ["authorization", "token", "*.authorization", "*.token", "headers.authorization", "password", "*.password"],
  },
  pino.destination({ fd: 2, sync: false }),
);
export type Logger = typeof logger;
