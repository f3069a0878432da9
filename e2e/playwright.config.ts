/**
 * End-to-end tests against the production build on a fresh database (see
 * serve.ts). Run with `npm run test:e2e`; the first run builds the app.
 */
import { defineConfig } from "@playwright/test";
import { BASE_URL } from "./support/settings";

export default defineConfig({
  testDir: "specs",
  outputDir: "../test-results",
  fullyParallel: true,
  // Playwright's default is half the cores: one worker on two. The specs mostly wait on the server and the browser.
  workers: "100%",
  forbidOnly: !!process.env.CI,
  retries: 0,
  // Last, so its verdict on the servers' logs is the run's last word.
  reporter: [["list"], ["html", { open: "never", outputFolder: "../playwright-report" }], ["./support/server-log-reporter.ts"]],
  use: {
    baseURL: BASE_URL,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
  projects: [
    {
      name: "chromium",
      use: {
        browserName: "chromium",
        launchOptions: {
          // Debian's Chromium: `npx playwright install` cannot download browsers here.
          executablePath: "/usr/bin/chromium",
          args: [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
          ],
        },
      },
    },
  ],
  webServer: {
    command: "node --import tsx e2e/serve.ts",
    cwd: "..",
    url: `${BASE_URL}/api/health`,
    // A cold `next build` plus a fresh database, on two cores.
    timeout: 180_000,
    // Always our own server on our own fresh database, never whatever answers on the port.
    reuseExistingServer: false,
    gracefulShutdown: { signal: "SIGTERM", timeout: 15_000 },
    stdout: "pipe",
    stderr: "pipe",
  },
});
