// The dashboard's forms arrive as url-encoded bodies (@fastify/formbody): a field is its text,
// or '' when it is missing or repeated (a list is not what any of our inputs send).
export function formField(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** A field a form may send several times (checkboxes of one name): its texts, [] when absent. */
export function formList(body: unknown, name: string): string[] {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
