import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isLinkError, parseVideoLink, type ParsedLink } from '../../src/domain/links.ts';
import type { Platform } from '../../src/domain/platform.ts';

const YT = 'dQw4w9WgXcQ';
const YT_DASH = 'a-B_c1D2e3F';
const TT = '7231338487075638570'; // > 2^53: must survive as a string
const TW = '1795938274619383808';

type Accepted = [link: string, platform: Platform, platformId: string | null, shortCode?: string];

const accepted: Accepted[] = [
  // YouTube: watch?v=
  [`https://www.youtube.com/watch?v=${YT}`, 'youtube', YT],
  [`https://youtube.com/watch?v=${YT}`, 'youtube', YT],
  [`https://m.youtube.com/watch?v=${YT}`, 'youtube', YT],
  [`https://music.youtube.com/watch?v=${YT}&list=RDAMVM${YT}`, 'youtube', YT],
  [`http://www.youtube.com/watch?v=${YT}`, 'youtube', YT],
  [`https://www.youtube.com/watch/?v=${YT}`, 'youtube', YT],
  [`https://www.youtube.com/watch?v=${YT_DASH}`, 'youtube', YT_DASH],
  [`https://www.youtube.com/watch?feature=share&v=${YT}`, 'youtube', YT],
  [`https://www.youtube.com/watch?app=desktop&t=42s&v=${YT}&si=abcDEF123`, 'youtube', YT],
  [`https://www.youtube.com/watch?v=${YT}&t=1m30s&feature=youtu.be`, 'youtube', YT],
  [`https://www.youtube.com/watch?v=${YT}#t=30`, 'youtube', YT],
  [`HTTPS://WWW.YouTube.COM/watch?v=${YT}`, 'youtube', YT],
  // YouTube: youtu.be
  [`https://youtu.be/${YT}`, 'youtube', YT],
  [`https://youtu.be/${YT}/`, 'youtube', YT],
  [`https://youtu.be/${YT}?si=Xy12_ab-CD`, 'youtube', YT],
  [`https://youtu.be/${YT}?t=10`, 'youtube', YT],
  [`http://youtu.be/${YT}`, 'youtube', YT],
  // YouTube: embed, shorts, live
  [`https://www.youtube.com/embed/${YT}`, 'youtube', YT],
  [`https://www.youtube.com/embed/${YT}?start=5&autoplay=1`, 'youtube', YT],
  [`https://www.youtube-nocookie.com/embed/${YT}`, 'youtube', YT],
  [`https://www.youtube.com/shorts/${YT}`, 'youtube', YT],
  [`https://youtube.com/shorts/${YT}?feature=share`, 'youtube', YT],
  [`https://m.youtube.com/shorts/${YT}/`, 'youtube', YT],
  [`https://www.youtube.com/live/${YT}`, 'youtube', YT],
  [`https://www.youtube.com/live/${YT}?si=abc`, 'youtube', YT],
  // TikTok: long form
  [`https://www.tiktok.com/@scout2015/video/${TT}`, 'tiktok', TT],
  [`https://tiktok.com/@scout2015/video/${TT}`, 'tiktok', TT],
  [`https://m.tiktok.com/@scout2015/video/${TT}`, 'tiktok', TT],
  [`https://www.tiktok.com/@user.name_1/video/${TT}/`, 'tiktok', TT],
  [`https://www.tiktok.com/@scout2015/video/${TT}?is_from_webapp=1&sender_device=pc&lang=en`, 'tiktok', TT],
  [`http://www.tiktok.com/@scout2015/video/${TT}`, 'tiktok', TT],
  // TikTok: short forms, resolved later by a redirect
  ['https://vm.tiktok.com/ZMeAbC123/', 'tiktok', null, 'ZMeAbC123'],
  ['https://vm.tiktok.com/ZMeAbC123', 'tiktok', null, 'ZMeAbC123'],
  ['https://vt.tiktok.com/ZSjKLmn9/', 'tiktok', null, 'ZSjKLmn9'],
  ['https://www.tiktok.com/t/ZTRabc123/', 'tiktok', null, 'ZTRabc123'],
  ['https://tiktok.com/t/ZTRabc123', 'tiktok', null, 'ZTRabc123'],
  ['https://vm.tiktok.com/ZMeAbC123/?_r=1&_t=8abc', 'tiktok', null, 'ZMeAbC123'],
  // Instagram
  ['https://www.instagram.com/p/C1a2B3c4D5e/', 'instagram', 'C1a2B3c4D5e'],
  ['https://www.instagram.com/p/C1a2B3c4D5e', 'instagram', 'C1a2B3c4D5e'],
  ['https://instagram.com/p/C1a2B3c4D5e/', 'instagram', 'C1a2B3c4D5e'],
  ['https://m.instagram.com/p/C1a2B3c4D5e/', 'instagram', 'C1a2B3c4D5e'],
  ['https://www.instagram.com/reel/C-x_Yz12345/', 'instagram', 'C-x_Yz12345'],
  ['https://www.instagram.com/reel/C-x_Yz12345/?utm_source=ig_web_copy_link&igsh=MzRlODBiNWFlZA==', 'instagram', 'C-x_Yz12345'],
  ['https://www.instagram.com/reels/C-x_Yz12345/', 'instagram', 'C-x_Yz12345'],
  ['https://www.instagram.com/tv/B_qwerty123/', 'instagram', 'B_qwerty123'],
  ['https://www.instagram.com/some.creator_1/p/C1a2B3c4D5e/', 'instagram', 'C1a2B3c4D5e'],
  ['https://www.instagram.com/some.creator_1/reel/C-x_Yz12345/', 'instagram', 'C-x_Yz12345'],
  ['http://www.instagram.com/p/C1a2B3c4D5e/', 'instagram', 'C1a2B3c4D5e'],
  // X / Twitter
  [`https://twitter.com/jack/status/${TW}`, 'twitter', TW],
  [`https://www.twitter.com/jack/status/${TW}`, 'twitter', TW],
  [`https://mobile.twitter.com/jack/status/${TW}`, 'twitter', TW],
  [`https://m.twitter.com/jack/status/${TW}`, 'twitter', TW],
  [`https://x.com/jack/status/${TW}`, 'twitter', TW],
  [`https://www.x.com/jack/status/${TW}`, 'twitter', TW],
  [`https://mobile.x.com/jack/status/${TW}`, 'twitter', TW],
  [`https://x.com/jack/status/${TW}/`, 'twitter', TW],
  [`https://x.com/jack/status/${TW}?s=20&t=AbCdEf`, 'twitter', TW],
  [`https://x.com/Some_User99/status/${TW}/video/1`, 'twitter', TW],
  [`https://twitter.com/jack/status/${TW}/photo/2`, 'twitter', TW],
  [`https://x.com/i/status/${TW}`, 'twitter', TW],
  [`https://x.com/i/web/status/${TW}`, 'twitter', TW],
  [`http://twitter.com/jack/status/20`, 'twitter', '20'],
  [`https://x.com/jack/status/9223372036854775807`, 'twitter', '9223372036854775807'],
];

describe('parseVideoLink: accepted links', () => {
  for (const [link, platform, platformId, shortCode] of accepted) {
    it(`${link} -> ${platform} ${platformId ?? `short ${shortCode}`}`, () => {
      const expected: ParsedLink = shortCode === undefined ? { platform, platformId, videoLink: link } : { platform, platformId, shortCode, videoLink: link };
      assert.deepStrictEqual(parseVideoLink(link), expected);
    });
  }

  it('keeps the link as given, trimmed', () => {
    const link = `https://youtu.be/${YT}?si=abc`;
    assert.deepStrictEqual(parseVideoLink(`  \n${link}\t `), { platform: 'youtube', platformId: YT, videoLink: link });
  });

  it('keeps numeric ids as exact strings beyond 2^53', () => {
    const result = parseVideoLink(`https://www.tiktok.com/@a/video/${TT}`);
    assert.ok(!isLinkError(result));
    assert.equal(result.platformId, TT);
    assert.notEqual(String(Number(TT)), TT);
  });

  it('has no shortCode key on a long link', () => {
    const result = parseVideoLink(`https://www.tiktok.com/@a/video/${TT}`);
    assert.ok(!('shortCode' in result));
  });
});

const rejected: [link: string, why: string][] = [
  ['', 'empty'],
  ['   ', 'blank'],
  ['not a url', 'plain text'],
  [`youtube.com/watch?v=${YT}`, 'no scheme'],
  [`www.youtube.com/watch?v=${YT}`, 'no scheme'],
  [`//www.youtube.com/watch?v=${YT}`, 'scheme-relative'],
  [`ftp://www.youtube.com/watch?v=${YT}`, 'other scheme'],
  [`javascript:alert(1)//https://youtu.be/${YT}`, 'javascript:'],
  [`data:text/html,https://youtu.be/${YT}`, 'data:'],
  [`https:/youtu.be/${YT}`, 'one slash'],
  [`https:\\\\youtu.be\\${YT}`, 'backslashes'],
  [`https://you\ttu.be/${YT}`, 'tab inside'],
  [`https://youtu.be/${YT} https://evil.com`, 'space inside'],
  // wrong hosts
  [`https://evil.com/watch?v=${YT}`, 'other host'],
  [`https://youtube.com.evil.com/watch?v=${YT}`, 'known host as a subdomain'],
  [`https://evilyoutube.com/watch?v=${YT}`, 'known host as a suffix'],
  [`https://evil.youtube.com/watch?v=${YT}`, 'unknown subdomain'],
  [`https://youtube.com@evil.com/watch?v=${YT}`, 'user-info pointing elsewhere'],
  [`https://evil.com@youtube.com/watch?v=${YT}`, 'user-info'],
  [`https://www.youtube.com:8443/watch?v=${YT}`, 'port'],
  [`https://www.youtube.com./watch?v=${YT}`, 'trailing dot'],
  [`https://%77ww.youtube.com/watch?v=${YT}`, 'percent-encoded host'],
  [`https://xn--yutube-wqf.com/watch?v=${YT}`, 'look-alike host'],
  [`https://youtube.co/watch?v=${YT}`, 'other TLD'],
  [`https://tiktok.com.evil.com/@a/video/${TT}`, 'tiktok look-alike'],
  [`https://evil.com/@a/video/${TT}`, 'tiktok path on another host'],
  [`https://x.com.evil.com/jack/status/${TW}`, 'x look-alike'],
  [`https://nitter.net/jack/status/${TW}`, 'mirror host'],
  [`https://instagram.com.evil.com/p/C1a2B3c4D5e/`, 'instagram look-alike'],
  // YouTube: bad ids and paths
  ['https://www.youtube.com/watch?v=dQw4w9WgXc', '10-character id'],
  ['https://www.youtube.com/watch?v=dQw4w9WgXcQQ', '12-character id'],
  ['https://www.youtube.com/watch?v=dQw4w9WgX!Q', 'bad character in id'],
  ['https://www.youtube.com/watch?v=', 'empty v'],
  ['https://www.youtube.com/watch', 'no v'],
  [`https://www.youtube.com/watch?V=${YT}`, 'V is not v'],
  [`https://www.youtube.com/watch?feature=share&amp;v=${YT}`, 'HTML-escaped query'],
  [`https://www.youtube.com/?v=${YT}`, 'v on the home page'],
  [`https://www.youtube.com/${YT}`, 'bare id on youtube.com'],
  ['https://www.youtube.com/', 'home page'],
  ['https://www.youtube.com/@somechannel', 'channel'],
  ['https://www.youtube.com/channel/UC1234567890', 'channel id'],
  ['https://www.youtube.com/playlist?list=PL123', 'playlist'],
  ['https://www.youtube.com/shorts/', 'shorts without id'],
  ['https://www.youtube.com/live', 'live without id'],
  [`https://www.youtube.com/embed/${YT}/extra`, 'extra segment'],
  [`https://www.youtube.com//watch?v=${YT}`, 'empty segment'],
  [`https://www.youtube.com/watch//?v=${YT}`, 'two trailing slashes'],
  [`https://youtu.be/watch?v=${YT}`, 'watch on youtu.be'],
  ['https://youtu.be/', 'youtu.be without id'],
  ['https://youtu.be/dQw4w9WgXc', 'youtu.be short id'],
  [`https://music.youtube.com/shorts/${YT}`, 'shorts on music.youtube.com'],
  [`https://www.youtube-nocookie.com/watch?v=${YT}`, 'watch on youtube-nocookie'],
  // TikTok
  ['https://www.tiktok.com/@scout2015', 'profile'],
  ['https://www.tiktok.com/@scout2015/video/', 'no id'],
  ['https://www.tiktok.com/@scout2015/video/72313384870756385x', 'non-digit id'],
  ['https://www.tiktok.com/@scout2015/video/0723133848707563857', 'leading zero'],
  ['https://www.tiktok.com/@scout2015/video/723133848707563857012', '21 digits'],
  // Past a signed 64-bit id (9223372036854775807): no platform has such a video.
  ['https://www.tiktok.com/@scout2015/video/72313384870756385701', '20 digits'],
  ['https://www.tiktok.com/@scout2015/video/9223372036854775808', 'one past the largest 64-bit id'],
  ['https://x.com/jack/status/18446744073709551615', 'an unsigned 64-bit id'],
  [`https://www.tiktok.com/scout2015/video/${TT}`, 'user without @'],
  [`https://www.tiktok.com/@/video/${TT}`, 'empty user'],
  [`https://www.tiktok.com/@scout2015/photo/${TT}`, 'photo post'],
  [`https://www.tiktok.com/video/${TT}`, 'no user'],
  ['https://www.tiktok.com/t/', 't without code'],
  ['https://vm.tiktok.com/', 'short host without code'],
  ['https://vm.tiktok.com/ZMe/extra/', 'short host with two segments'],
  [`https://vm.tiktok.com/@a/video/${TT}`, 'long path on short host'],
  ['https://vm.tiktok.com/ZM$e/', 'bad short code'],
  // Instagram
  ['https://www.instagram.com/some.creator_1/', 'profile'],
  ['https://www.instagram.com/p/', 'no code'],
  ['https://www.instagram.com/stories/some.creator/3141592653589793238/', 'story'],
  ['https://www.instagram.com/x/C1a2B3c4D5e/', 'unknown kind'],
  ['https://www.instagram.com/p/C1a2B3c4D5e/extra/', 'extra segment'],
  ['https://www.instagram.com/p/C1a2!B3c4/', 'bad code'],
  ['https://www.instagram.com/a/b/p/C1a2B3c4D5e/', 'two segments before'],
  // X / Twitter
  ['https://x.com/jack', 'profile'],
  ['https://x.com/jack/status/', 'no id'],
  ['https://x.com/jack/status/12a4', 'non-digit id'],
  ['https://x.com/jack/status/012', 'leading zero'],
  [`https://x.com/jack/statuses/${TW}`, 'statuses'],
  [`https://x.com/status/${TW}`, 'no user'],
  [`https://x.com/this_user_is_too_long/status/${TW}`, 'user longer than 15'],
  [`https://x.com/jack/status/${TW}/video`, 'video without index'],
  [`https://x.com/jack/status/${TW}/likes`, 'other suffix'],
  [`https://x.com/jack/status/${TW}/video/1/extra`, 'extra after media'],
  [`https://twitter.co/jack/status/${TW}`, 'other TLD'],
  [`https://api.twitter.com/jack/status/${TW}`, 'api host'],
  // Size
  [`https://www.youtube.com/watch?v=${YT}&pad=${'a'.repeat(2100)}`, 'too long'],
];

describe('parseVideoLink: rejected links', () => {
  for (const [link, why] of rejected) {
    it(`${why}: ${JSON.stringify(link.length > 80 ? `${link.slice(0, 77)}...` : link)}`, () => {
      const result = parseVideoLink(link);
      assert.ok(isLinkError(result), `accepted as ${JSON.stringify(result)}`);
      assert.deepStrictEqual(Object.keys(result), ['error']);
      assert.match(result.error, /Accepted/);
    });
  }

  it('tells which shapes are accepted: all platforms for an unknown host', () => {
    const result = parseVideoLink('https://vimeo.com/123456');
    assert.ok(isLinkError(result));
    assert.match(result.error, /vimeo\.com is not a TikTok, YouTube, Instagram or X\/Twitter video host/);
    for (const shape of ['/@<user>/video/<id>', 'watch?v=<id>', 'youtu.be/<id>', '/embed/<id>', '/p/<code>/', '/reel/<code>/', '/<user>/status/<id>', 'vm.tiktok.com/<code>/']) {
      assert.ok(result.error.includes(shape), `message lacks ${shape}: ${result.error}`);
    }
  });

  it("tells which shapes are accepted: the platform's own for a known host", () => {
    const result = parseVideoLink('https://www.youtube.com/watch?v=short');
    assert.ok(isLinkError(result));
    assert.match(result.error, /^Not a recognised YouTube video link\. Accepted: .*watch\?v=<id>/);
    assert.ok(!result.error.includes('tiktok'));
  });

  it('says so when the text is not a URL', () => {
    const result = parseVideoLink('hello');
    assert.ok(isLinkError(result));
    assert.match(result.error, /^video_link is not an http\(s\) URL of a video\. Accepted links: /);
  });

  it('refuses a non-string without throwing', () => {
    assert.ok(isLinkError(parseVideoLink(undefined as unknown as string)));
    assert.ok(isLinkError(parseVideoLink(42 as unknown as string)));
  });
});

describe('parseVideoLink: characters no store can hold', () => {
  const bad = [
    `https://youtu.be/${YT}#\ud800`,
    `https://youtu.be/${YT}#a\u0000b`,
    `https://www.youtube.com/watch?v=${YT}&x=\udc00`,
    `https://www.youtube.com/watch?v=${YT}&x=%00\u0000`,
    `https://www.tiktok.com/@a\ud800b/video/${TT}`,
    `https://x.com/user/status/${TW}?s=\udbff`,
  ];
  for (const link of bad) {
    it(`refuses ${JSON.stringify(link)}, saying why`, () => {
      const result = parseVideoLink(link);
      assert.ok(isLinkError(result), JSON.stringify(result));
      assert.match(result.error, /NUL or an unpaired UTF-16 surrogate/);
    });
  }

  it('accepts well-formed non-ASCII text, a surrogate pair included, in the fragment and the user segment', () => {
    for (const link of [`https://youtu.be/${YT}#\ud83d\ude00`, `https://www.tiktok.com/@caf\u00e9\ud83d\ude00/video/${TT}`]) {
      assert.ok(!isLinkError(parseVideoLink(link)), link);
    }
  });

  it('refuses an absurdly long link before reading it', () => {
    const result = parseVideoLink(`https://youtu.be/${YT}#${'\ud800'.repeat(1_000_000)}`);
    assert.ok(isLinkError(result));
    assert.match(result.error, /longer than 2048/);
  });
});
