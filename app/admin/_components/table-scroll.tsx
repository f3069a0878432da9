/**
 * A table too wide for a phone that scrolls inside its own box, its first
 * column held in view (globals.css, `.table-scroll`). The box takes focus so
 * a keyboard can scroll it when nothing inside can be focused; it is a group
 * named by its section's heading, not a second region of the same name.
 */
import type { ReactNode } from "react";

export function TableScroll({ labelledBy, children }: { labelledBy: string; children: ReactNode }) {
  return (
    <div className="table-scroll" role="group" aria-labelledby={labelledBy} tabIndex={0}>
      {children}
    </div>
  );
}
