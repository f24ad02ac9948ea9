import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { liveCollectorsFromEnv } from '../../src/collect/collectors/from-env.ts';
import { TikTokShortLinkFake } from '../support/fakes/tiktok-short-link-fake.ts';
import { YouTubeFake } from '../support/fakes/youtube-fake.ts';
import { ref } from './refs.ts';

const clock = new ManualClock('2026-07-01T12:00:00.000Z');
const ALL = {
  YOUTUBE_API_KEY: 'yt',
  X_BEARER_TOKEN: 'x',
  TIKTOK_CLIENT_KEY: 'tk',
  TIKTOK_CLIENT_SECRET: 'ts',
  INSTAGRAM_ACCESS_TOKEN: 'ig',
  INSTAGRAM_USER_ID: '1784',
};

describe('liveCollectorsFromEnv', () => {
  it('builds one collector per platform whose credentials are all set', () => {
    const live = liveCollectorsFromEnv(ALL, clock);
    assert.deepEqual(live.missing, []);
    assert.deepEqual(
      Object.fromEntries(Object.entries(live.collectors).map(([platform, collector]) => [platform, collector.name])),
      { tiktok: 'tiktok-research-api', youtube: 'youtube-data-api-v3', instagram: 'instagram-graph-api', twitter: 'x-api-v2' },
    );
  });

  it('lists a platform as missing when any of its variables is unset or blank', () => {
    const live = liveCollectorsFromEnv({ ...ALL, TIKTOK_CLIENT_SECRET: undefined, INSTAGRAM_USER_ID: '  ' }, clock);
    assert.deepEqual(live.missing, ['tiktok', 'instagram']);
    assert.equal(live.collectors.tiktok, undefined);
  });

  it('refuses malformed settings at start-up', () => {
    assert.throws(() => liveCollectorsFromEnv({ ...ALL, YOUTUBE_API_URL: 'not a url' }, clock), /YOUTUBE_API_URL/);
    assert.throws(() => liveCollectorsFromEnv({ COLLECTOR_FETCH_TIMEOUT_MS: '-5' }, clock), /COLLECTOR_FETCH_TIMEOUT_MS/);
  });

  it('sends calls to the configured base URLs', async () => {
    const youtube = await YouTubeFake.start();
    const shortLinks = await TikTokShortLinkFake.start();
    try {
      youtube.videos.set('dQw4w9WgXcQ', { title: 't', channelTitle: 'c', description: '', statistics: { viewCount: '7' } });
      shortLinks.links.set('/ZMabc/', { status: 301, location: 'https://www.tiktok.com/@a/video/7170520270497680683' });
      const live = liveCollectorsFromEnv({ YOUTUBE_API_KEY: youtube.apiKey, YOUTUBE_API_URL: youtube.baseUrl, TIKTOK_SHORT_LINK_URL: shortLinks.origin }, clock);
      assert.equal((await live.collectors.youtube!.collect([ref('youtube', 'dQw4w9WgXcQ')]))[0]!.status, 'ok');
      assert.deepEqual(await live.resolveTikTokShortLink('https://vm.tiktok.com/ZMabc/'), { status: 'resolved', platformId: '7170520270497680683' });
    } finally {
      await youtube.close();
      await shortLinks.close();
    }
  });
});
