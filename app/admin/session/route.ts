/** POST signs in, DELETE signs out (see server/admin/sign-in.ts). */
import { app } from "@/server/app";

export const dynamic = "force-dynamic";

export const POST = (req: Request) => app.adminSessionRoutes.signIn(req);
export const DELETE = (req: Request) => app.adminSessionRoutes.signOut(req);
