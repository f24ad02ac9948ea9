// The dashboard's forms arrive as url-encoded bodies (@fastify/formbody): a field is its text,
// or '' when it is missing or repeated (a list is not what any of our inputs send).
import type { KeyMode } from '../domain/platform.ts';

export function formField(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** The `mode` field: 'live' or 'test', or null when the form sent anything else. */
export function formMode(body: unknown): KeyMode | null {
  const mode = formField(body, 'mode');
  return mode === 'live' || mode === 'test' ? mode : null;
}

/** A field a form may send several times (checkboxes of one name): its texts, [] when absent. */
export function formList(body: unknown, name: string): string[] {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
