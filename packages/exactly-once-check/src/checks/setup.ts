/**
 * The run's first requests, before any check: the setup must work, or the
 * run ends (exit 2) with one line saying what to fix, before anything else
 * is sent. A refused credential, a refused `--data` or a count that is not
 * one is the user's to fix, not a finding about the server; checked here,
 * it cannot turn into six failed checks.
 */
import { brief, CountError, successful, type Target } from "../target.js";
import { SetupError, type Header } from "../types.js";

/** Fresh keys tried when the server answers 5xx: a blip is not the user's setup. */
const ATTEMPTS = 3;

const clip = (s: string, n = 120) => (s.length > n ? `${s.slice(0, n)}…` : s);

async function countable(target: Target, headers: Header[], which: string): Promise<void> {
  try {
    await target.count(`setup: count${which}`, headers);
  } catch (error) {
    if (!(error instanceof CountError)) throw error;
    const a = error.exchange.answer;
    if (a && (a.status === 401 || a.status === 403))
      throw new SetupError(`--count-url refused the credential${which} (${a.status}): check -H / --other-header`);
    if (a && successful(a))
      throw new SetupError(
        `--count-url answered ${a.status} without a count (${clip(a.body)}): it must answer a number, an array, or an object with count, total or a data array`,
      );
    throw new SetupError(`--count-url${which}: ${brief(error.exchange)}; give a GET that counts what the endpoint creates`);
  }
}

async function accepted(target: Target, headers: Header[], which: string): Promise<void> {
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const x = await target.send(`setup: a first request${which}`, target.postKey(target.newKey(), undefined, headers));
    const a = x.answer;
    if (!a) throw new SetupError(`the first request${which} got no answer (${x.error})`);
    if (a.status === 401 || a.status === 403)
      throw new SetupError(`the server refused the credential${which} (${a.status}): check ${which ? "--other-header" : "-H"}`);
    if (a.status >= 400 && a.status < 500)
      throw new SetupError(`the server refused --data${which} (${a.status} ${clip(a.body)}): give a --data (and -H) it accepts`);
    if (a.status < 500) return;
  }
  throw new SetupError(`the server answered 5xx to ${ATTEMPTS} first requests${which}, each with a fresh key: it does not work yet`);
}

export async function setup(target: Target): Promise<void> {
  const other = target.options.otherHeaders;
  if (target.options.countUrl) {
    await countable(target, [], "");
    if (other.length) await countable(target, other, " under --other-header");
  }
  await accepted(target, [], "");
  if (other.length) await accepted(target, other, " under --other-header");
}
