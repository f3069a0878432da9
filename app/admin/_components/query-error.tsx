/** What a failed admin query says: a signed-out session gets a way back to the sign-in form. */
export function QueryError({ error }: { error: { message: string; data?: { code?: string } | null } }) {
  if (error.data?.code === "UNAUTHORIZED") {
    return (
      <p className="error" role="alert">
        Your admin session has ended. <a href="/admin">Sign in again</a>.
      </p>
    );
  }
  return (
    <p className="error" role="alert">
      Could not load this: {error.message}
    </p>
  );
}
