/** The provider's signature on a webhook: HMAC-SHA256 of the raw body with PSP_WEBHOOK_SECRET, checked before anything is parsed. */
import { createHmac, timingSafeEqual } from "node:crypto";
import { DomainError, toTRPCError } from "../errors";

export const SIGNATURE_HEADER = "Psp-Signature";

function signatureValid(secret: string, rawBody: string | undefined, signature: string | null): boolean {
  if (rawBody === undefined || !signature || !/^[0-9a-f]{64}$/i.test(signature)) return false;
  const expected = createHmac("sha256", secret).update(rawBody, "utf8").digest();
  return timingSafeEqual(expected, Buffer.from(signature, "hex"));
}

/** A 401 unless the request's body carries the provider's signature (also the lab twin's receiver). */
export function checkSignature(ctx: { rawBody?: string; headers: Headers; webhookSecret: string }): void {
  if (!signatureValid(ctx.webhookSecret, ctx.rawBody, ctx.headers.get(SIGNATURE_HEADER))) {
    throw toTRPCError(new DomainError("invalid-signature", 401, `The ${SIGNATURE_HEADER} header is not the HMAC-SHA256 of this body.`));
  }
}
