// The rebuild computes the metadata key in SQL (metadataKeySql) and the projector and collection
// in Node (metadataKey): a key that differs makes the next snapshot carry its metadata again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metadataKeySql } from '../../projections/videos.ts';
import type { VideoMetadata } from '../../src/domain/platform.ts';
import { metadataKey } from '../../src/domain/video.ts';
import { createTestDatabase } from '../support/db.ts';

test('the SQL metadata key, over the metadata text a rebuild stages from an event, is the Node one, for escapes and nulls', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  const samples: VideoMetadata[] = [
    { title: 'A "quoted" \\ back\\slash\ttab\nline \u2028 é 🎬', creator: '\u0001control', description: '' },
    { title: null, creator: null, description: null } as unknown as VideoMetadata,
    {} as VideoMetadata,
    ...Array.from({ length: 200 }, (_, i) => ({ title: `video ${i}`, creator: `creator ${i % 7}`, description: i % 3 ? `text ${i}` : '' }) as VideoMetadata),
  ];
  // As the staging reads an event's data (projections/video-events.ts): the nested object as text.
  const { rows } = await db.pool.query<{ key: string }>(
    `SELECT ${metadataKeySql('d.metadata')} AS key
     FROM unnest($1::json[]) WITH ORDINALITY AS s(data, i), json_to_record(s.data) AS d("videoId" text, metadata text, slot text)
     ORDER BY i`,
    [samples.map((metadata) => JSON.stringify({ videoId: 'v', metadata, slot: 3 }))],
  );
  const keys = samples.map(metadataKey);
  assert.deepEqual(
    rows.map((r) => r.key),
    keys,
  );
  // The projector hashes the metadata it read back from the log.
  assert.deepEqual(samples.map((m) => metadataKey(JSON.parse(JSON.stringify(m)) as VideoMetadata)), keys);
  assert.equal(new Set(keys).size, samples.length, 'different metadata, different keys');
});
