import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chunksOf, collectInBatches } from '../../src/collect/collectors/batch.ts';
import { Malformed } from '../../src/collect/collectors/json.ts';
import { ref } from './refs.ts';

describe('collectInBatches', () => {
  it('fails only the group whose reading threw, whatever it threw, and answers the others', async () => {
    const refs = ['a1', 'a2', 'b1', 'c1'].map((id) => ref('youtube', id));
    const answers = await collectInBatches('Fake', refs, {
      isValidId: () => true,
      group: (all) => [all.slice(0, 2), all.slice(2, 3), all.slice(3)],
      async fetchGroup(group) {
        if (group[0]!.platformId === 'a1') throw new TypeError('Cannot convert object to primitive value');
        if (group[0]!.platformId === 'c1') throw new Malformed('items is not an array');
        return new Map(group.map((r) => [r.platformId, { status: 'ok', provider: 'fake', metrics: { views: '1' }, metadata: { title: '', creator: '', description: '' } }]));
      },
    });
    assert.deepEqual(
      answers.map((answer) => [answer.status, 'message' in answer ? answer.message : '']),
      [
        ['invalid', 'Fake answered what could not be read: Cannot convert object to primitive value'],
        ['invalid', 'Fake answered what could not be read: Cannot convert object to primitive value'],
        ['ok', ''],
        ['invalid', 'Fake answered an unexpected shape: items is not an array'],
      ],
    );
  });

  it('chunksOf cuts refs into groups of the size given', () => {
    assert.deepEqual(chunksOf(2)(['1', '2', '3'].map((id) => ref('twitter', id))).map((g) => g.length), [2, 1]);
  });
});
