/**
 * The key table's statements, composed once.
 *
 * postgres-js (4.x) keeps each tagged template's prepared statement under
 * the template's strings array, found by identity. A template with a
 * fragment in it is different: the driver builds it again on every call,
 * with a query object for each fragment, and looks its statement up by the
 * whole text. The rules (rules.ts) are SQL, and the statements on the hot
 * path use them: a replay's look at its key, a recoverable claim, a
 * completion. Embedded as fragments, they were rebuilt for every request.
 *
 * `statement` splices the rules' SQL and the statements it is given into
 * one strings array when the module loads. Each parameter gets a hole, and
 * the parameter is a function of the statement's input. A call
 * (`Statement.on`) sends that array with the parameters, exactly as a
 * literal template would, so the driver finds its prepared statement by
 * identity. The text is the same SQL the fragments built.
 */
import type { ISql, PendingQuery } from "postgres";

/** SQL text written by the package itself (a rule, a clause): spliced into a statement as it is, never a user's value. */
export class SqlText {
  constructor(readonly text: string) {}
}

/** A name (an alias, a CTE's) as a quoted identifier, as postgres-js quotes one. */
export const identifier = (name: string) => new SqlText(`"${name.replace(/"/g, '""')}"`);

/** A parameter of a statement: read from the statement's input on each call. */
type Parameter<I> = (input: I) => string | number | null;

export class Statement<I> {
  constructor(
    readonly strings: TemplateStringsArray,
    readonly parameters: readonly Parameter<I>[],
  ) {}

  /** The statement with `input`'s parameters, unsent until awaited (or executed), on `q`. */
  on<R extends readonly (object | undefined)[]>(q: ISql, input: I): PendingQuery<R> {
    const values = this.parameters.map((parameter) => parameter(input));
    return q<R>(this.strings, ...values);
  }
}

/** A literal strings array as a tagged template has one: postgres-js tells a template by its `raw`. */
export const templateOf = (strings: string[]): TemplateStringsArray => Object.freeze(Object.assign(strings, { raw: [...strings] }));

/**
 * A statement composed now: `SqlText` and other statements of the same
 * input are spliced in, and every function becomes a parameter.
 */
export function statement<I>(strings: TemplateStringsArray, ...parts: (SqlText | Statement<I> | Parameter<I>)[]): Statement<I> {
  const texts = [strings[0]!];
  const parameters: Parameter<I>[] = [];
  const append = (text: string) => (texts[texts.length - 1] += text);
  parts.forEach((part, i) => {
    if (part instanceof SqlText) append(part.text);
    else if (part instanceof Statement) {
      append(part.strings[0]!);
      texts.push(...part.strings.slice(1));
      parameters.push(...part.parameters);
    } else {
      parameters.push(part);
      texts.push("");
    }
    append(strings[i + 1]!);
  });
  return new Statement(templateOf(texts), parameters);
}

/** SQL text composed of text and other `SqlText`, for rules built on rules. */
export function sqlText(strings: TemplateStringsArray, ...parts: SqlText[]): SqlText {
  return new SqlText(strings.reduce((text, s, i) => text + parts[i - 1]!.text + s));
}
