import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasUnstorableCharacters } from '../../src/domain/storable.ts';
import { bodyOf, MAX_BODY_BYTES } from '../../src/notify/webhooks/payloads.ts';

describe('webhook bodies', () => {
  // Receivers that keep bodies in JSON/jsonb refuse a lone surrogate, as our own stores do (DESIGN §9).
  it('shortens platform text for size without splitting an emoji', () => {
    // As long as a stored description may be, with each emoji's pair straddling an even cut.
    const description = `a${'😀'.repeat(14_999)}`;
    const body = bodyOf('snapshot.created', '2026-07-01T12:00:00.000Z', { video: { id: 'v', current_metadata: { title: '', creator: '', description } } });
    assert.ok(Buffer.byteLength(body) < MAX_BODY_BYTES, `body of ${Buffer.byteLength(body)} bytes`);
    const sent = JSON.parse(body).data.video.current_metadata.description as string;
    assert.ok(sent.length < description.length && sent.endsWith('…'), 'the description is shortened');
    assert.equal(hasUnstorableCharacters(sent), false, `the shortened description ends ${JSON.stringify(sent.slice(-3))}`);
  });
});
