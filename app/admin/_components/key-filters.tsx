"use client";
/**
 * The filter bar. Menus and check boxes apply at once; the text fields apply
 * on Enter or "Apply", so the table does not refetch on every keystroke.
 */
import { useState, type FormEvent } from "react";
import { STATE_LABELS, type StateName } from "./format";
import type { KeyFilters as Filters } from "./use-key-filters";

type Text = { tenantId: string; procedure: string; keyPrefix: string };

const textOf = (f: Filters): Text => ({ tenantId: f.tenantId ?? "", procedure: f.procedure ?? "", keyPrefix: f.keyPrefix ?? "" });
const textKey = (t: Text) => `${t.tenantId}\n${t.procedure}\n${t.keyPrefix}`;

export function KeyFilters({
  filters,
  update,
  clear,
}: {
  filters: Filters;
  update: (change: Partial<Filters>) => void;
  clear: () => void;
}) {
  const [draft, setDraft] = useState(() => textOf(filters));
  // When the URL's text filters change from elsewhere (a tenant link, "Clear"), the fields follow.
  const [synced, setSynced] = useState(() => textKey(textOf(filters)));
  const fromUrl = textOf(filters);
  if (textKey(fromUrl) !== synced) {
    setSynced(textKey(fromUrl));
    setDraft(fromUrl);
  }

  const apply = (event: FormEvent) => {
    event.preventDefault();
    update({
      tenantId: draft.tenantId.trim() || undefined,
      procedure: draft.procedure.trim() || undefined,
      keyPrefix: draft.keyPrefix.trim() || undefined,
    });
  };
  const field = (name: keyof Text) => ({
    value: draft[name],
    onChange: (e: { target: { value: string } }) => setDraft({ ...draft, [name]: e.target.value }),
  });

  return (
    <form role="search" aria-label="Filter keys" className="filters" onSubmit={apply}>
      <div className="field">
        <label htmlFor="filter-state">State</label>
        <select
          id="filter-state"
          value={filters.state ?? ""}
          onChange={(e) => update({ state: (e.target.value || undefined) as StateName | undefined })}
        >
          <option value="">All states</option>
          {Object.entries(STATE_LABELS).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-tenant">Tenant id</label>
        <input id="filter-tenant" type="text" spellCheck={false} placeholder="ten_…" {...field("tenantId")} />
      </div>
      <div className="field">
        <label htmlFor="filter-procedure">Procedure</label>
        <input id="filter-procedure" type="text" spellCheck={false} placeholder="payments.create" {...field("procedure")} />
      </div>
      <div className="field">
        <label htmlFor="filter-key">Key starts with</label>
        <input id="filter-key" type="search" spellCheck={false} {...field("keyPrefix")} />
      </div>
      <div className="field checks">
        <label>
          <input type="checkbox" checked={filters.staleOnly} onChange={(e) => update({ staleOnly: e.target.checked })} /> Stale only
        </label>
        <label>
          <input type="checkbox" checked={filters.expiredOnly} onChange={(e) => update({ expiredOnly: e.target.checked })} /> Expired only
        </label>
      </div>
      <div className="field actions">
        <button type="submit">Apply</button>
        <button type="button" className="secondary" onClick={clear}>
          Clear filters
        </button>
      </div>
    </form>
  );
}
