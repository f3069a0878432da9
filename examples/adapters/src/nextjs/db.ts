/** The Next app's one pool, opened once per server process (a module of its own, so a route file exports only handlers). */
import postgres from "postgres";

export const sql = postgres(process.env.DATABASE_URL!);
