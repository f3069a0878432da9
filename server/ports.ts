/**
 * A port: where a part of the core tells plug-ins (the failure lab, metrics)
 * what happened, without knowing who listens. The composition root
 * subscribes them; the core only emits. A listener that throws is logged
 * and never breaks the caller: the money path must not depend on an observer.
 */
import { logger } from "./logger";

export type Port<T> = {
  emit: (value: T) => void;
  /** Returns the unsubscribe. */
  subscribe: (listener: (value: T) => void) => () => void;
};

export function createPort<T>(name: string): Port<T> {
  const listeners = new Set<(value: T) => void>();
  return {
    emit: (value) => {
      for (const listener of listeners) {
        try {
          listener(value);
        } catch (err) {
          logger.warn({ err, port: name }, "a plug-in's listener failed");
        }
      }
    },
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
