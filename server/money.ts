/**
 * Money at the edge is a decimal string with exactly two fraction digits
 * ("25.00"); inside it is integer minor units. Never a float in between.
 */
import currencyCodes from "currency-codes";
import { z } from "zod";

export const MAX_MINOR = 100_000_000; // 1,000,000.00

/**
 * A codec, not a one-way transform: the completer re-runs a stored request
 * whose canonical input holds minor units, and encodes it back to the wire
 * form ("25.00") that the procedure's own input schema parses again.
 */
export const amountSchema = z.codec(
  z
    .string({ error: "must be a decimal string such as \"25.00\"" })
    .regex(/^(0|[1-9]\d{0,6})\.\d{2}$/, { error: "must be a decimal string with exactly two fraction digits, such as \"25.00\"" }),
  z.number().int().min(1, { error: "must be greater than 0.00" }).max(MAX_MINOR, { error: "must be at most 1000000.00" }),
  { decode: (s) => Number(s.replace(".", "")), encode: (minor) => formatMinor(minor) },
);

/** ISO 4217 alphabetic codes, from the list the `currency-codes` package ships (ISO's list one, dated in `publishDate`). */
const ISO_4217 = new Set(currencyCodes.codes());

export const currencySchema = z
  .string({ error: "must be an ISO 4217 currency code such as \"EUR\"" })
  .refine((code) => ISO_4217.has(code), { error: "must be an ISO 4217 currency code such as \"EUR\"", abort: true });

export function formatMinor(minor: number): string {
  const sign = minor < 0 ? "-" : "";
  const abs = Math.abs(minor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}
