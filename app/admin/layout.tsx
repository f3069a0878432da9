/** The admin area: its pages talk to the admin API through the tRPC React client. */
import type { Metadata } from "next";
import type { ReactNode } from "react";
import { TRPCReactProvider } from "../_trpc/client";

export const metadata: Metadata = { title: "Admin" };

export default function AdminLayout({ children }: { children: ReactNode }) {
  return <TRPCReactProvider>{children}</TRPCReactProvider>;
}
