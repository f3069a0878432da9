/**
 * What a procedure declares about itself beyond its schemas: its REST route,
 * and whether it is idempotent or resumable. The procedure builders set it
 * (server/trpc.ts); the procedure registry (server/registry.ts) reads it for
 * REST, the OpenAPI document and the completer.
 */
import type { ProblemSlug } from "./problems";

export type RestMeta = {
  method: "GET" | "POST";
  /** Under /api, with `{param}` segments taken from the input. */
  path: `/${string}`;
  status?: number;
  summary: string;
  tags: string[];
  /**
   * The problem types the handler itself may answer with (a decline, a rule,
   * the provider away). Those its kind implies (auth, validation, a path id,
   * idempotency, the body) the document adds by itself.
   */
  refusals?: ProblemSlug[];
  /** Authenticated by the provider's `Psp-Signature` over the body instead of a tenant's token. */
  signed?: true;
};
export type Meta = {
  rest?: RestMeta;
  /** Set by the idempotent builders; the OpenAPI document then asks for Idempotency-Key. */
  idempotent?: boolean;
  /**
   * A recoverable procedure the completer may run again from its stored
   * request alone (tenant, key, canonical input) when its client went away.
   */
  resumable?: boolean;
};
