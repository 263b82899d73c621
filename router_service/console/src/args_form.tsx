// The pending call's arguments as a form made from the tool's JSON schema (RunState.tools:
// the tools as the run listed them), beside the raw JSON, both editing the same object. A
// property the form cannot show (an object, an array of non-strings) is edited in the JSON.
import { useEffect, useState } from "preact/hooks";

export interface Field {
  name: string;
  kind: "string" | "number" | "integer" | "boolean" | "enum" | "strings";
  required: boolean;
  description: string;
  options: unknown[];  // for "enum"
}

type Schema = { type?: string | string[]; enum?: unknown[]; items?: Schema; description?: string };

function typeOf(s: Schema): string | undefined {
  return Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
}

// The fields of an object schema's properties the form can show; [] for a schema without any
// (or one that is not JSON).
export function schemaFields(schemaJson: string): Field[] {
  let schema: { properties?: Record<string, Schema>; required?: string[] };
  try {
    schema = JSON.parse(schemaJson);
  } catch {
    return [];
  }
  if (!schema || typeof schema !== "object" || !schema.properties || typeof schema.properties !== "object") return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields: Field[] = [];
  for (const [name, p] of Object.entries(schema.properties)) {
    if (!p || typeof p !== "object") continue;
    const t = typeOf(p);
    let kind: Field["kind"] | undefined;
    if (Array.isArray(p.enum) && p.enum.length > 0) kind = "enum";
    else if (t === "string" || t === "number" || t === "integer" || t === "boolean") kind = t;
    else if (t === "array" && p.items && typeOf(p.items) === "string" && !p.items.enum) kind = "strings";
    if (kind) fields.push({ name, kind, required: required.has(name), description: p.description ?? "", options: p.enum ?? [] });
  }
  return fields;
}

// What is wrong with `args` against the fields, in words naming the field ("" = nothing).
export function checkArgs(fields: Field[], args: Record<string, unknown>): string {
  for (const f of fields) {
    const v = args[f.name];
    if (v === undefined) {
      if (f.required) return `"${f.name}" is required.`;
      continue;
    }
    const bad = (what: string) => `"${f.name}" must be ${what}.`;
    switch (f.kind) {
      case "string": if (typeof v !== "string") return bad("a string"); break;
      case "number": if (typeof v !== "number" || !isFinite(v)) return bad("a number"); break;
      case "integer": if (!Number.isInteger(v)) return bad("an integer"); break;
      case "boolean": if (typeof v !== "boolean") return bad("true or false"); break;
      case "strings": if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) return bad("a list of strings"); break;
      case "enum": if (!f.options.some((o) => JSON.stringify(o) === JSON.stringify(v))) return bad(`one of ${f.options.map((o) => JSON.stringify(o)).join(", ")}`); break;
    }
  }
  return "";
}

function NumberInput({ field, value, onChange }: { field: Field; value: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(value === undefined ? "" : String(value));
  useEffect(() => {
    if (value === undefined ? text.trim() !== "" : Number(text) !== value) setText(value === undefined ? "" : String(value));
  }, [value]);
  return (
    <input
      id={`arg-${field.name}`}
      inputMode={field.kind === "integer" ? "numeric" : "decimal"}
      aria-required={field.required}
      value={text}
      onInput={(e) => {
        const t = e.currentTarget.value;
        setText(t);
        // Not a number yet: kept as text, so the check names the field.
        onChange(t.trim() === "" ? undefined : isNaN(Number(t)) ? t : Number(t));
      }}
    />
  );
}

function Input({ field, value, onChange }: { field: Field; value: unknown; onChange: (v: unknown) => void }) {
  const id = `arg-${field.name}`;
  switch (field.kind) {
    case "boolean":
      return <input id={id} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
    case "enum":
      return (
        <select id={id} aria-required={field.required} value={value === undefined ? "" : JSON.stringify(value)}
          onChange={(e) => onChange(e.currentTarget.value === "" ? undefined : JSON.parse(e.currentTarget.value))}>
          <option value="">(not set)</option>
          {field.options.map((o) => <option value={JSON.stringify(o)}>{String(o)}</option>)}
        </select>
      );
    case "number":
    case "integer":
      return <NumberInput field={field} value={value} onChange={onChange} />;
    case "strings":
      return (
        <textarea id={id} rows={3} aria-required={field.required}
          value={Array.isArray(value) ? value.join("\n") : ""}
          onInput={(e) => {
            const t = e.currentTarget.value;
            onChange(t === "" ? undefined : t.split("\n"));
          }} />
      );
    default: {
      const text = typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value);
      return text.includes("\n") || text.length > 80 ? (
        <textarea id={id} rows={4} aria-required={field.required} value={text} onInput={(e) => onChange(e.currentTarget.value === "" ? undefined : e.currentTarget.value)} />
      ) : (
        <input id={id} aria-required={field.required} value={text}
          onInput={(e) => onChange(e.currentTarget.value === "" ? undefined : e.currentTarget.value)} />
      );
    }
  }
}

// The form: one labelled input per field, required ones marked. A field emptied is left out of
// the arguments (an empty string or list can still be written in the JSON). `args` is the object the raw
// JSON holds; null when that JSON is not an object (then the form waits for it to be fixed).
export function ArgsForm(props: { tool: string; fields: Field[]; args: Record<string, unknown> | null; onChange: (args: Record<string, unknown>) => void }) {
  const { fields, args } = props;
  if (fields.length === 0) return null;
  return (
    <fieldset class="args-form" aria-label={`Arguments of ${props.tool}`}>
      <legend>Arguments of {props.tool} (from the tool's schema; * required)</legend>
      {args === null && <p class="muted">The JSON below is not an object: fix it to use the form.</p>}
      {args !== null && fields.map((f) => (
        <div class="field" key={f.name}>
          <label for={`arg-${f.name}`}>
            {f.name}
            {f.required && <span aria-hidden="true"> *</span>}
            {f.required && <span class="sr-only"> (required)</span>}
            <span class="muted"> {f.kind === "strings" ? "list of strings, one a line" : f.kind}</span>
          </label>
          <Input field={f} value={args[f.name]} onChange={(v) => {
            const next = { ...args };
            if (v === undefined) delete next[f.name];
            else next[f.name] = v;
            props.onChange(next);
          }} />
          {f.description && <div class="muted">{f.description}</div>}
        </div>
      ))}
    </fieldset>
  );
}
