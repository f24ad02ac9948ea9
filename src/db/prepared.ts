// A statement PostgreSQL keeps prepared on each connection, for the small ones run on every
// request or page of the log (a read view, a read of streams, a NOTIFY). An unnamed statement is
// planned on every call: during POST /videos/track planning was a third of the database's
// statement time (pg_stat_statements with track_planning: 1.9 s of planning against 3.4 s of
// execution). A named one is planned for its first calls and then, when the plan does not depend
// on the values, not again: the read view's planning fell from 255 ms to 6 ms in such a run.
//
// Only for fixed texts whose result columns cannot change under them: a plan kept across a
// change of a table's column types fails ("cached plan must not change result type").

const names = new Map<string, string>();

/** `text` as a named statement: the same name on every connection of this process. */
export function prepared(text: string): { name: string; text: string } {
  let name = names.get(text);
  if (name === undefined) {
    name = `vidtrack_prepared_${names.size + 1}`;
    names.set(text, name);
  }
  return { name, text };
}
