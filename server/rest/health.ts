/** What `GET /api/health` answers (app/api/health/route.ts), for the route's types and the OpenAPI document. */
import { z } from "zod";

export const healthSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("ok"), database: z.literal("up") }),
  z.object({ status: z.literal("degraded"), database: z.literal("down") }),
  z.object({ status: z.literal("starting"), detail: z.string() }),
]);
export type Health = z.infer<typeof healthSchema>;
