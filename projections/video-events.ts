// The events of the video streams, parsed once for a build's replays (replay.ts). Four read
// models replay from them (videos, snapshots, usage, dashboard), and parsing the JSON of each
// event was most of what each replay cost: 3-6 µs an event, paid by each of them. The build
// parses them once into unlogged tables of the build schema (scratch: made again by a build that
// starts over, dropped when it ends), in parts of the log that the connections share out. Each
// part is partitioned by type (snapshots, trackings, the rest), so that a replay that reads one
// type reads only its rows. Every column is text, as the event says it: a value the read models
// cannot hold fails the replay that casts it, not the staging, and that read model is then built
// page by page, which parks the event (runner.ts).
import type { PoolClient } from 'pg';
import type { VideoEvent } from '../src/domain/video.ts';
import { inExemptTransaction, type LogInDatabase } from '../src/eventstore/port.ts';
import { ident, typeList } from './projection.ts';

/** The fields of the video events the replays read, by their names in the events' data. */
const FIELDS = [
  'videoId', 'orgId', 'mode', 'jobId', 'keyId', 'videoLink', 'platform', 'platformId', 'durationDays', 'startedAt',
  'slot', 'snapshotId', 'snapshotTime', 'provider', 'price', 'consecutiveFailures', 'isDeleted', 'at', 'nextSlot', 'previousStatus',
] as const;

/** The types of a video stream's events (VideoEvent), every one of which the videos read model reads. */
export const VIDEO_EVENT_TYPES = [
  'VideoTracked', 'SnapshotRecorded', 'CollectionFailed', 'VideoErrored', 'VideoPaused', 'VideoResumed', 'VideoCompleted', 'VideoCancelled',
] as const satisfies readonly VideoEvent['type'][];
const VIDEO_EVENT_TYPE_SET = new Set<string>(VIDEO_EVENT_TYPES);

export function isVideoEventType(type: string): boolean {
  return VIDEO_EVENT_TYPE_SET.has(type);
}

function table(schema: string, part: number, partition?: string): string {
  return `${ident(schema)}.${ident(`replay_video_events_${part}${partition ? `_${partition}` : ''}`)}`;
}

/** Each part's partitions: a type of its own for the bulk of the log, the rarer ones together. */
const PARTITIONS = [
  ['snapshots', `FOR VALUES IN ('SnapshotRecorded')`],
  ['trackings', `FOR VALUES IN ('VideoTracked')`],
  ['rest', 'DEFAULT'],
] as const;

/**
 * Parses the video events of `log`, part `part` of the log (a FROM item named `log`), into a
 * table of its own, in a transaction of its own (the replays read it from other connections),
 * exempt from the horizon of `logInDatabase` (its readers need not wait for it: it appends no
 * event). Resolves to how many there were.
 */
export async function stageVideoEvents(client: PoolClient, schema: string, log: string, part: number, logInDatabase: Pick<LogInDatabase, 'exemptFromHorizon'>): Promise<number> {
  const staged = table(schema, part);
  // The objects too as text: as json, each would be checked for JSON again here, which every
  // replay waits for; the replays that read them cast them. Parsing a lane's share of a
  // 4,000,000-event log took 9.7-9.8 s so, against 10.3-10.5 s.
  const columns = `${[...FIELDS, 'metrics', 'metadata'].map((f) => `"${f}" text`).join(', ')}`;
  await client.query(`DROP TABLE IF EXISTS ${staged}`);
  return inExemptTransaction(logInDatabase, client, async () => {
    // The lanes already keep every core busy: workers of a parallel plan would only pass the
    // rows to the lane through shared memory.
    await client.query('SET LOCAL max_parallel_workers_per_gather = 0');
    await client.query(
      `CREATE TABLE ${staged} (stream_id text, revision bigint, type text, ${columns}) PARTITION BY LIST (type)`,
    );
    // Scratch read once by the replays: autovacuum would only take a core from them to vacuum
    // it (seen: a worker vacuuming the staged tables for about 7 s of a 42 s rebuild).
    for (const [name, values] of PARTITIONS) {
      await client.query(`CREATE UNLOGGED TABLE ${table(schema, part, name)} PARTITION OF ${staged} ${values} WITH (autovacuum_enabled = false)`);
    }
    const { rowCount } = await client.query(
      `INSERT INTO ${staged}
       SELECT log.stream_id, log.revision, log.type, d.*
       FROM ${log}, json_to_record(log.data) AS d(${columns})
       WHERE log.type IN (${typeList(VIDEO_EVENT_TYPES)})`,
    );
    // The replays' plans need to know the rows: unanalyzed, a grouping by video is guessed at
    // 200 rows and sorted to disk instead of hashed. A small sample is enough for that, and the
    // default one took 0.3-0.5 s a part, which every replay waits for.
    await client.query('SET LOCAL default_statistics_target = 10');
    await client.query(`ANALYZE ${staged}`);
    return rowCount ?? 0;
  });
}

/** A FROM item named `video_events` over every part staged. */
export function stagedVideoEvents(schema: string, parts: number): string {
  const all = Array.from({ length: parts }, (_, part) => `SELECT * FROM ${table(schema, part)}`).join(' UNION ALL ');
  return `(${all}) AS video_events`;
}

/** The tables stageVideoEvents makes, for the build to drop. */
export function stagedVideoEventTables(schema: string, parts: number): string[] {
  return Array.from({ length: parts }, (_, part) => table(schema, part));
}
