/** POST signs in, DELETE signs out (see server/admin/sign-in.ts). */
import { signInRequest, signOutRequest } from "@/server/admin/sign-in";

export const dynamic = "force-dynamic";

export const POST = (req: Request) => signInRequest(req);
export const DELETE = (req: Request) => signOutRequest(req);
