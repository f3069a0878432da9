#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so `npx exactly-once-check` works
// right after `npm ci` with no build step to forget.
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
