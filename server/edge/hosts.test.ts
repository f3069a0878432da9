import { describe, expect, it } from "vitest";
import { hostAllowed } from "./hosts";

const ALLOWED = ["shop.example.com", "[2001:db8::1]"];

describe("hostAllowed", () => {
  it.each([
    "localhost",
    "localhost:3000",
    "LOCALHOST:3000",
    "localhost.",
    "app.localhost:3000",
    "127.0.0.1",
    "127.0.0.1:3000",
    "127.1.2.3:65535",
    "[::1]",
    "[::1]:3000",
    "shop.example.com",
    "shop.example.com:443",
    "[2001:db8::1]:8443",
  ])("answers %s", (host) => expect(hostAllowed(host, ALLOWED)).toBe(true));

  it.each([
    "evil.example",
    "evil.example:3000",
    "shop.example.com.evil.example",
    // Values that only start like a loopback or allowed name: the whole value must be one host and a port.
    "[::1]evil.example",
    "[::1]:3000evil",
    "127.0.0.1:3000 evil.example",
    "127.0.0.1:3000evil.example",
    "localhost:3000,evil.example",
    "localhost,evil.example",
    "localhost evil.example",
    "localhost:",
    "localhost:99999",
    "localhost:3000:3000",
    "user@localhost",
    "localhost/evil",
    "",
    "[::2]",
    "127.0.0.1.evil.example",
  ])("refuses %j", (host) => expect(hostAllowed(host, ALLOWED)).toBe(false));

  it("lets a request without Host through: no browser, so no rebinding", () => {
    expect(hostAllowed(undefined, [])).toBe(true);
    expect(hostAllowed(null, [])).toBe(true);
  });
});
