import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chunksOf, collectInBatches, type GroupAnswer } from '../../src/collect/collectors/batch.ts';
import type { VideoRef } from '../../src/collect/collector.ts';
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

  it('asks no further group once the platform is unavailable, nor once the call ran past its deadline', async () => {
    const refs = ['a', 'b', 'c'].map((id) => ref('twitter', id));
    const asked: string[] = [];
    const plan = (answer: (id: string) => Promise<GroupAnswer>) => ({
      isValidId: () => true,
      group: chunksOf(1),
      fetchGroup: async ([only]: readonly VideoRef[]) => {
        asked.push(only!.platformId);
        return answer(only!.platformId);
      },
    });
    const timeout = { status: 'unavailable', message: 'Fake did not answer: no answer within 10000 ms' } as const;
    const down = await collectInBatches('Fake', refs, plan(async () => timeout));
    assert.deepEqual(asked, ['a']);
    assert.deepEqual(down, [timeout, timeout, timeout]);

    asked.length = 0;
    const slow = await collectInBatches('Fake', refs, plan(async (id) => {
      await new Promise((resolve) => setTimeout(resolve, 60));
      return new Map([[id, { status: 'not_found', deleted: false, message: 'gone' }]]);
    }), 50);
    assert.deepEqual(asked, ['a'], 'the first call took 60 ms of a 50 ms deadline');
    assert.deepEqual(slow.map((r) => r.status), ['not_found', 'unavailable', 'unavailable']);
    assert.equal(slow[1]!.status === 'unavailable' && slow[1]!.message, 'Fake not asked: this call to it took over 0.05 s');
    assert.equal(slow[1]!.status === 'unavailable' && slow[1]!.ownLimit, true, 'not asked for want of time: our limit, not the platform\'s failure');
  });

  it('chunksOf cuts refs into groups of the size given', () => {
    assert.deepEqual(chunksOf(2)(['1', '2', '3'].map((id) => ref('twitter', id))).map((g) => g.length), [2, 1]);
  });
});
