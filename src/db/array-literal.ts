// PostgreSQL array literals for the large array parameters of set-based statements (a batch's
// append, a projection's page). Given a JavaScript array, pg writes the literal itself, quoting
// every element with two regular-expression replaces and a concatenation: for a collection
// batch's append (six arrays of 5,000 elements) that was about 3.5% of the collecting process's
// CPU profile. Elements without a quote or a backslash (all of ours, nearly always) need no
// escaping: the literal is then one join.

const NEEDS_ESCAPE = /["\\]/;
const ESCAPE_ALL = new RegExp(NEEDS_ESCAPE.source, 'g');

type Element = string | number | boolean | null;

const plain = (value: Element) => value !== null && (typeof value !== 'string' || !NEEDS_ESCAPE.test(value));

/** `{"a","1",NULL}`: the literal pg would send for the same array (every element quoted, as pg does). */
export function arrayLiteral(values: readonly Element[]): string {
  if (values.length === 0) return '{}';
  if (values.every(plain)) return `{"${values.join('","')}"}`;
  return `{${values.map((value) => (value === null ? 'NULL' : `"${String(value).replace(ESCAPE_ALL, '\\$&')}"`)).join(',')}}`;
}
