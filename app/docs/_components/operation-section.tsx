/**
 * One operation: what it does, what it takes (a field table) with the
 * answer's fields and the problem types folded under it, and beside them one
 * example call and its answer. Folded, so the page stays scannable.
 */
import { answerOf, curlOf } from "../_lib/example";
import { operationRows } from "../_lib/fields";
import { problemsByStatus, successOf, type Operation, type Parameter } from "../_lib/operations";
import { FieldTable } from "./field-table";
import { MarkdownText } from "./markdown-text";
import { ProblemLink } from "./problem-link";

/** `shared`: parameters whose description the page prints once, above the operations. */
export function OperationSection({ operation, shared }: { operation: Operation; shared: Parameter[] }) {
  const { anchor, method, path, op } = operation;
  const { takes, gives } = operationRows(op, shared);
  const success = successOf(op);
  const answer = answerOf(operation);
  const problems = problemsByStatus(op);
  const name = `${method} /api${path}`;
  return (
    <section id={anchor} className="card endpoint docs-operation" aria-label={name}>
      <div className="docs-operation-body">
        <div>
          <h2>
            <span className="method">{method}</span> <code>/api{path}</code>
          </h2>
          <p className="docs-summary">{op.summary}</p>
          {op.description && <MarkdownText text={op.description} />}
          {takes.length > 0 ? <FieldTable caption="Request" rows={takes} /> : <p className="muted">Takes no parameters.</p>}
          <div className="docs-folds">
            {gives.length > 0 && (
              <details>
                <summary>Answer fields ({success.status})</summary>
                <FieldTable caption={`Answer ${success.status}`} rows={gives} />
              </details>
            )}
            <details>
              <summary>Errors: {problems.map((p) => p.status).join(", ")}</summary>
              <dl className="facts docs-errors">
                {problems.map(({ status, slugs }) => (
                  <div key={status} className="field-row">
                    <dt>{status}</dt>
                    <dd>
                      {slugs.map((slug, i) => (
                        <span key={slug}>
                          {i > 0 && ", "}
                          <ProblemLink slug={slug} />
                        </span>
                      ))}
                    </dd>
                  </div>
                ))}
              </dl>
            </details>
          </div>
        </div>
        {/* One visible caption for the pair: the call reads as curl and the answer starts with its status. */}
        <figure className="docs-example">
          <figcaption>Example</figcaption>
          <figure>
            <figcaption className="visually-hidden">Example request</figcaption>
            <pre tabIndex={0}>
              <code>{curlOf(operation)}</code>
            </pre>
          </figure>
          <figure>
            <figcaption className="visually-hidden">Example answer</figcaption>
            <pre tabIndex={0} className="docs-answer">
              <code>{`HTTP ${answer.status}\n${answer.body ?? ""}`}</code>
            </pre>
          </figure>
        </figure>
      </div>
    </section>
  );
}
