import type { Metadata } from "next";
import type { ReactNode } from "react";
import { app } from "@/server/app";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Exactly Once", template: "%s · Exactly Once" },
  description: "Payments and checkouts that are safe to retry: idempotency keys for tRPC on PostgreSQL, in working code.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <header className="site-header">
          <a href="/" className="brand">
            Exactly Once
          </a>
          <nav aria-label="Main">
            <a href="/checkout">Checkout</a>
            {/* The lab exists in demo mode only (read per request; pages prerendered at build time show it as built). */}
            {app.settings.DEMO_MODE ? <a href="/lab">Failure lab</a> : null}
            <a href="/docs">API docs</a>
            <a href="/admin">Admin</a>
          </nav>
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}
