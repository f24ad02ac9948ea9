// HTML by tagged template: every interpolated value is escaped unless it is already Html, so
// platform text (titles, creators, descriptions) and anything a client typed can only ever be
// shown as text. There is no other way to put text into a page.

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Nothing for null, undefined and false; arrays joined; Html as it is; anything else escaped text. */
function part(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** JSON for a <script type="application/json"> block: `<` escaped so no text can close the element. */
export function jsonBlock(id: string, value: unknown): Html {
  const json = JSON.stringify(value).replace(/</g, '\\u003c');
  return new Html(`<script type="application/json" id="${escapeHtml(id)}">${json}</script>`);
}
