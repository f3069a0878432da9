/**
 * Money at the edge is a decimal string with exactly two fraction digits
 * ("25.00"); inside it is integer minor units. Never a float in between.
 */
import currencyCodes from "currency-codes";
import { z } from "zod";

export const MAX_MINOR = 100_000_000; // 1,000,000.00

const MAX_UNITS = MAX_MINOR / 100;
/**
 * The whole rule for an amount on the wire, as one pattern so the OpenAPI
 * document states it too: two fraction digits, greater than 0.00, at most
 * MAX_MINOR (a power of ten: 1 to its digits less one, any cents, or itself with .00).
 */
const AMOUNT_PATTERN = new RegExp(`^(0\\.(0[1-9]|[1-9]\\d)|[1-9]\\d{0,${String(MAX_UNITS).length - 2}}\\.\\d{2}|${MAX_UNITS}\\.00)$`);

/** Why a string is not an amount: the format, or which end of the range it is past. */
function amountIssue(input: unknown): string {
  if (typeof input !== "string" || !/^\d+\.\d{2}$/.test(input) || /^0\d/.test(input))
    return 'must be a decimal string with exactly two fraction digits, such as "25.00"';
  return /^0\.00$/.test(input) ? "must be greater than 0.00" : `must be at most ${formatMinor(MAX_MINOR)}`;
}

/**
 * A codec, not a one-way transform: the completer re-runs a stored request
 * whose canonical input holds minor units, and encodes it back to the wire
 * form ("25.00") that the procedure's own input schema parses again.
 */
export const amountSchema = z
  .codec(
    z.string({ error: 'must be a decimal string such as "25.00"' }).regex(AMOUNT_PATTERN, { error: (issue) => amountIssue(issue.input) }),
    z.number().int(),
    { decode: (s) => Number(s.replace(".", "")), encode: (minor) => formatMinor(minor) },
  )
  .meta({ description: `A decimal string with exactly two fraction digits, from \`"0.01"\` to \`"${MAX_UNITS}.00"\`.` });

/** ISO 4217 alphabetic codes, from the list the `currency-codes` package ships (ISO's list one, dated in `publishDate`): an enum, so the document lists them. */
export const currencySchema = z
  .enum(currencyCodes.codes() as [string, ...string[]], { error: 'must be an ISO 4217 currency code such as "EUR"' })
  // The title names the list where a reader meets it (the docs page prints the codes once, under this title).
  .meta({ title: "ISO 4217 currency code" });

export function formatMinor(minor: number): string {
  const sign = minor < 0 ? "-" : "";
  const abs = Math.abs(minor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}
