// Tracking from the dashboard over HTTP is Post/Redirect/Get: the POST tracks each line and
// answers 303 to the videos list of its mode, which shows each line's result once; a reload
// of that page tracks nothing again. The lines not tracked are back in the form.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { signedInOwner } from '../support/dashboard-owner.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service?.close());

const videoCount = async (orgId: string) => (await service.db.pool.query(`SELECT count(*)::int AS n FROM rm.videos WHERE org_id = $1`, [orgId])).rows[0].n as number;
const results = (body: string) => /<ul data-testid="track-results"[^>]*>([\s\S]*?)<\/ul>/.exec(body)?.[1];
const textarea = (body: string) => /<textarea id="links"[^>]*>([^<]*)<\/textarea>/.exec(body)?.[1];

describe('tracking videos in the dashboard', () => {
  it('redirects to the list, which shows each line’s result once; a reload tracks nothing again', async () => {
    const { orgId, client } = await signedInOwner(service);
    const tracked = await client.post('/videos', '/videos/track', { links: 'https://youtu.be/prgtrack001\nnot a video link', days: '1', mode: 'test' });
    assert.equal(tracked.statusCode, 303, tracked.body);
    assert.equal(tracked.headers.location, '/videos?mode=test');
    assert.equal(await videoCount(orgId), 1);

    const shown = await client.get('/videos?mode=test');
    assert.equal(shown.statusCode, 200, shown.body);
    const said = results(shown.body) ?? '';
    assert.match(said, /result-tracked"><strong>Tracked:<\/strong> <code class="wrap">https:\/\/youtu\.be\/prgtrack001<\/code>/);
    assert.match(said, /result-invalid"><strong>Invalid:<\/strong> <code class="wrap">not a video link<\/code>/);
    assert.equal(textarea(shown.body), 'not a video link', 'the line not tracked is back in the form, the tracked one is not');

    const reloaded = await client.get('/videos?mode=test');
    assert.equal(reloaded.statusCode, 200);
    assert.equal(results(reloaded.body), undefined, 'a reload shows no results');
    assert.equal(textarea(reloaded.body), '', 'and a blank form');
    assert.equal(await videoCount(orgId), 1, 'a reload tracks nothing');
  });

  it('a form refused as a whole still answers the POST with the form and its error', async () => {
    const { orgId, client } = await signedInOwner(service);
    const refused = await client.post('/videos', '/videos/track', { links: 'https://youtu.be/prgtrack002', days: '31', mode: 'test' });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(refused.body, /Days must be a whole number from 1 to 30\./);
    assert.equal(textarea(refused.body), 'https://youtu.be/prgtrack002', 'the form keeps what was typed');
    assert.equal(await videoCount(orgId), 0);
  });

  it('a mode other than Live or Test (absent, miscased, repeated) is refused with the form, not tracked live', async () => {
    const { orgId, client } = await signedInOwner(service);
    const typed = { links: 'https://youtu.be/prgtrack003', days: '1' };
    const forms: Array<[string, Record<string, string | string[]>]> = [
      ['absent', typed],
      ['miscased', { ...typed, mode: 'Test' }],
      ['repeated', { ...typed, mode: ['test', 'test'] }],
    ];
    for (const [what, fields] of forms) {
      const refused = await client.post('/videos', '/videos/track', fields);
      assert.equal(refused.statusCode, 400, `${what}: ${refused.body}`);
      assert.match(refused.body, /Choose Live or Test\./, what);
      assert.equal(textarea(refused.body), 'https://youtu.be/prgtrack003', `${what}: the form keeps what was typed`);
    }
    assert.equal(await videoCount(orgId), 0, 'nothing tracked, live or test');
  });

  it('an overdrawn organization is told a line that adds up: the cost, the balance below zero, and what is missing', async () => {
    const { orgId, client } = await signedInOwner(service);
    // Overdrawn by one snapshot, as tracks sent at the same moment can leave it (README).
    await service.db.pool.query(`UPDATE rm.usage SET balance = -15000 WHERE org_id = $1`, [orgId]);
    const refused = await client.post('/videos', '/videos/track', { links: 'https://youtu.be/prgtrack004', days: '1', mode: 'live' });
    assert.equal(refused.statusCode, 303, refused.body);
    const shown = await client.get(refused.headers.location as string);
    assert.match(results(shown.body) ?? '', /Insufficient balance: it costs \$0\.36, the available balance is -\$0\.015, \$0\.375 is missing/);
    assert.equal(await videoCount(orgId), 0);
  });
});
