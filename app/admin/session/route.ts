/** POST signs in, DELETE signs out (see server/admin/sign-in.ts). */
import { adminSessionRoutes } from "@/server/app";

export const dynamic = "force-dynamic";

export const POST = (req: Request) => adminSessionRoutes.signIn(req);
export const DELETE = (req: Request) => adminSessionRoutes.signOut(req);
