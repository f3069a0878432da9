"use client";
/**
 * The dashboard's filters, kept in the URL so a reload, a shared link or the
 * 5-second refresh all show the same view. Changing any filter starts again
 * from the first page. The URL changes through `history.replaceState`, which
 * Next.js feeds into `useSearchParams` at once: no server round trip per
 * click (the page itself does not depend on the filters), and filter tweaks
 * stay out of the history.
 */
import { usePathname, useSearchParams } from "next/navigation";
import { useCallback, useMemo, useState } from "react";
import type { ListKeysInput } from "@/server/admin/list.schema";
import { STATE_LABELS, type StateName } from "./format";

export type KeyFilters = {
  state?: StateName;
  tenantId?: string;
  procedure?: string;
  keyPrefix?: string;
  staleOnly: boolean;
  expiredOnly: boolean;
  sort: "created_desc" | "created_asc";
  cursor?: string;
};

const text = (value: string | null) => (value && value.trim() !== "" ? value.trim() : undefined);

function parse(params: URLSearchParams): KeyFilters {
  const state = params.get("state");
  return {
    state: state && state in STATE_LABELS ? (state as StateName) : undefined,
    tenantId: text(params.get("tenant")),
    procedure: text(params.get("procedure")),
    keyPrefix: text(params.get("q")),
    staleOnly: params.get("stale") === "1",
    expiredOnly: params.get("expired") === "1",
    sort: params.get("sort") === "asc" ? "created_asc" : "created_desc",
    cursor: text(params.get("after")),
  };
}

function serialize(f: KeyFilters): string {
  const params = new URLSearchParams();
  if (f.state) params.set("state", f.state);
  if (f.tenantId) params.set("tenant", f.tenantId);
  if (f.procedure) params.set("procedure", f.procedure);
  if (f.keyPrefix) params.set("q", f.keyPrefix);
  if (f.staleOnly) params.set("stale", "1");
  if (f.expiredOnly) params.set("expired", "1");
  if (f.sort === "created_asc") params.set("sort", "asc");
  if (f.cursor) params.set("after", f.cursor);
  return params.toString();
}

/** The filters as `admin.keys.list` takes them. */
export const listInput = (f: KeyFilters): ListKeysInput => ({ ...f, limit: 50 });

export function useKeyFilters() {
  const params = useSearchParams();
  const pathname = usePathname();
  const fromUrl = useMemo(() => parse(new URLSearchParams(params.toString())), [params]);
  // The router applies a URL change in a transition, a render or two later; controls follow this
  // state at once (a checkbox must not flick back while the URL catches up) and the URL when it moves.
  const [filters, setFilters] = useState(fromUrl);
  const [seen, setSeen] = useState(fromUrl);
  if (fromUrl !== seen) {
    setSeen(fromUrl);
    setFilters(fromUrl);
  }
  const go = useCallback(
    (next: KeyFilters) => {
      setFilters(next);
      const query = serialize(next);
      window.history.replaceState(null, "", query ? `${pathname}?${query}` : pathname);
    },
    [pathname],
  );
  /** Any change but paging returns to the first page. */
  const update = useCallback((change: Partial<KeyFilters>) => go({ ...filters, cursor: undefined, ...change }), [filters, go]);
  const clear = useCallback(() => go({ staleOnly: false, expiredOnly: false, sort: filters.sort }), [filters.sort, go]);
  return { filters, update, clear };
}
