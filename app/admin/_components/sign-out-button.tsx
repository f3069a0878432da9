/** Sign-out: a plain form posting to the server action, so it works before hydration too. */
import { signOut } from "../actions";

export function SignOutButton() {
  return (
    <form action={signOut}>
      <button type="submit" className="secondary">
        Sign out
      </button>
    </form>
  );
}
