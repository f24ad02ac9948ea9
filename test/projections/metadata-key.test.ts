// The rebuild computes the metadata key in SQL (metadataKeySql) and the projector and collection
// in Node (metadataKey): a key that differs makes the next snapshot carry its metadata again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metadataKeySql } from '../../projections/videos.ts';
import type { VideoMetadata } from '../../src/domain/platform.ts';
import { metadataKey } from '../../src/domain/video.ts';
import { createTestDatabase } from '../support/db.ts';

test('the SQL metadata key is the Node one, for escapes, nulls and keys with every base64url character', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  const samples: VideoMetadata[] = [
    { title: 'A "quoted" \\ back\\slash\ttab\nline \u2028 é 🎬', creator: '\u0001control', description: '' },
    { title: null, creator: null, description: null } as unknown as VideoMetadata,
    {} as VideoMetadata,
    ...Array.from({ length: 200 }, (_, i) => ({ title: `video ${i}`, creator: `creator ${i % 7}`, description: i % 3 ? `text ${i}` : '' }) as VideoMetadata),
  ];
  const { rows } = await db.pool.query<{ key: string }>(
    `SELECT ${metadataKeySql('m')} AS key FROM unnest($1::jsonb[]) WITH ORDINALITY AS s(m, i) ORDER BY i`,
    [samples.map((m) => JSON.stringify(m))],
  );
  assert.deepEqual(
    rows.map((r) => r.key),
    samples.map(metadataKey),
  );
  // The keys above hold '-' and '_' (where base64 has '+' and '/'), so both replacements are checked.
  const keys = samples.map(metadataKey).join('');
  assert.ok(keys.includes('-') && keys.includes('_'), 'the samples give keys with - and _');
});
