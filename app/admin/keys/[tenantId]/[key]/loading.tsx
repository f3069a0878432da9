/** Shown while the key page checks the session and renders. */
export default function Loading() {
  return (
    <p className="muted" role="status">
      Loading the key…
    </p>
  );
}
