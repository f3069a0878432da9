/** Fields as a table: name, where it goes (for parameters), type, required, and what it means. */
import type { FieldRow } from "../_lib/fields";
import { MarkdownText } from "./markdown-text";

export function FieldTable({ caption, rows }: { caption: string; rows: FieldRow[] }) {
  const located = rows.some((r) => r.in);
  return (
    // A field at a time on a phone: each row a card, its name first and its description last (globals.css, `.cards`).
    <table className="table docs-fields cards">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">name</th>
          {located && <th scope="col">in</th>}
          <th scope="col">type</th>
          <th scope="col">required</th>
          <th scope="col">description</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={`${row.in ?? "body"}:${row.name}`}>
            <td>
              <code>{row.name}</code>
            </td>
            {located && <td data-label="in">{row.in ?? "body"}</td>}
            <td data-label="type">{row.type}</td>
            <td data-label="required">{row.required ? "yes" : "no"}</td>
            <td>
              {row.longEnum && (
                <>
                  One of the {row.longEnum.values.length} values of <a href={`#${row.longEnum.id}`}>{row.longEnum.title}</a>.{" "}
                </>
              )}
              {row.sharedId ? (
                <>
                  As <a href={`#${row.sharedId}`}>described once</a> for every operation that takes it.
                </>
              ) : (
                <MarkdownText text={[row.description, ...row.rules].filter(Boolean).join(" ")} inline />
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
