/** The attempts recorded for a key, live: re-renders on every new attempt in this tab. */
import { useMemo, useSyncExternalStore } from "react";
import type { Attempt } from "@exactly-once/trpc/client";
import { attemptsText, onAttempt } from "./client";

export function useAttempts(key: string | undefined): Attempt[] {
  const text = useSyncExternalStore(
    (notify) => onAttempt(notify),
    () => (key ? attemptsText(key) : "[]"),
    () => "[]",
  );
  return useMemo(() => JSON.parse(text) as Attempt[], [text]);
}
