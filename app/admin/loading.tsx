/** Shown while the admin page checks the session and renders. */
export default function Loading() {
  return (
    <p className="muted" role="status">
      Loading the admin dashboard…
    </p>
  );
}
