/**
 * Keys per logical operation, on the client. An intent is what the user
 * means to do (this cart, this coupon, this card); its key is random, minted
 * when the intent first appears and kept for as long as the intent is the
 * same — across retries, reloads and tabs (the store is `localStorage`). A
 * changed intent gets a new key. The key is never derived from the payload:
 * two genuinely separate purchases of the same cart must not collide, so a
 * settled intent is forgotten and the next one gets a fresh key.
 *
 * A payment in flight is also written to `sessionStorage` (per tab), so a
 * reload can resume it with the same key.
 */
type KeyValueStorage = Pick<Storage, "getItem" | "setItem" | "removeItem">;

export type StoredIntent = { signature: string; key: string };
export type InFlight<I> = { key: string; input: I; startedAt: number };

/** A stable text for an intent: compares intents; it is never used as the key. */
export function signatureOf(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, x]) => [k, sort(x)]),
          )
        : v;
  return JSON.stringify(sort(value));
}

export function createIntentStore<I>(options: { name: string; shared: KeyValueStorage; perTab: KeyValueStorage; mint?: () => string }) {
  const intentKey = `${options.name}:intent`;
  const flightKey = `${options.name}:in-flight`;
  const mint = options.mint ?? (() => crypto.randomUUID());
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of listeners) l();
  };
  const read = <T>(storage: KeyValueStorage, name: string): T | undefined => {
    try {
      const raw = storage.getItem(name);
      return raw ? (JSON.parse(raw) as T) : undefined;
    } catch {
      return undefined;
    }
  };

  return {
    /** The key for this intent: the stored one if the intent is unchanged, else a new one. */
    keyFor(intent: I): string {
      const signature = signatureOf(intent);
      const stored = read<StoredIntent>(options.shared, intentKey);
      if (stored?.signature === signature) return stored.key;
      const key = mint();
      options.shared.setItem(intentKey, JSON.stringify({ signature, key } satisfies StoredIntent));
      changed();
      return key;
    },
    current(): StoredIntent | undefined {
      return read<StoredIntent>(options.shared, intentKey);
    },
    /** The operation finished for good: the next intent, even an identical one, is a new operation. */
    settle(): void {
      options.shared.removeItem(intentKey);
      options.perTab.removeItem(flightKey);
      changed();
    },
    begin(key: string, input: I): void {
      options.perTab.setItem(flightKey, JSON.stringify({ key, input, startedAt: Date.now() } satisfies InFlight<I>));
      changed();
    },
    /** An answer arrived (a refusal included): nothing to resume after a reload. */
    land(): void {
      options.perTab.removeItem(flightKey);
      changed();
    },
    /** For React's useSyncExternalStore; changes made by other tabs arrive as `storage` events, which callers forward. */
    subscribe(listener: () => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** A string that changes whenever the current key or the in-flight payment does. */
    snapshot(): string {
      return `${read<StoredIntent>(options.shared, intentKey)?.key ?? ""}|${read<InFlight<I>>(options.perTab, flightKey)?.key ?? ""}`;
    },
    inFlight(): InFlight<I> | undefined {
      return read<InFlight<I>>(options.perTab, flightKey);
    },
  };
}
