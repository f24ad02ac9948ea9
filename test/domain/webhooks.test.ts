// The webhooks decider and the retry schedule: given events, when a command, then events.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_ATTEMPTS, nextAttemptDelay, outcomeOf, parseRetryAfter, retryAfterOnServiceClock } from '../../src/domain/webhook-retry.ts';
import { checkWebhookUrl } from '../../src/domain/webhook-url.ts';
import { decideWebhooks, evolveWebhooks, initialWebhooksState, type WebhookCommand, type WebhooksState } from '../../src/domain/webhooks.ts';

const now = new Date('2026-03-01T00:00:00Z');
const create = (endpointId: string): WebhookCommand => ({ type: 'CreateEndpoint', orgId: 'o', endpointId, mode: 'live', url: 'https://x.test/', events: ['snapshot.created'], description: null, sealedSecret: 's1', now });
const disable = (attemptedAt: Date, at: Date): WebhookCommand => ({ type: 'DisableEndpoint', orgId: 'o', endpointId: 'e', reason: 'gone', attemptedAt, now: at });
function given(...commands: WebhookCommand[]): WebhooksState {
  return commands.reduce((state, c) => decideWebhooks(c, state).reduce(evolveWebhooks, state), initialWebhooksState);
}

describe('decideWebhooks', () => {
  test('at most 20 endpoints; a deleted one frees its place', () => {
    const full = given(...Array.from({ length: 20 }, (_, i) => create(`e${i}`)));
    assert.throws(() => decideWebhooks(create('e20'), full), { code: 'limit_reached', message: /at most 20/ });
    const freed = given(...Array.from({ length: 20 }, (_, i) => create(`e${i}`)), { type: 'DeleteEndpoint', orgId: 'o', endpointId: 'e0', now });
    assert.equal(decideWebhooks(create('e20'), freed).length, 1);
  });

  test('unknown event types are refused', () => {
    assert.throws(() => decideWebhooks({ ...create('e'), events: ['video.exploded'] } as WebhookCommand, initialWebhooksState), /unknown event type/);
  });

  test('rotation keeps the old sealed secret valid for 24 h', () => {
    const [rotated] = decideWebhooks({ type: 'RotateSecret', orgId: 'o', endpointId: 'e', sealedSecret: 's2', now }, given(create('e')));
    assert.equal(rotated!.type, 'WebhookSecretRotated');
    if (rotated!.type !== 'WebhookSecretRotated') return;
    assert.equal(rotated.data.previousSealedSecret, 's1');
    assert.equal(Date.parse(rotated.data.previousExpiresAt) - now.getTime(), 24 * 3_600_000);
  });

  test('disabling twice records once; a test needs an enabled endpoint', () => {
    const disabled = given(create('e'), disable(now, now));
    assert.deepEqual(decideWebhooks(disable(now, now), disabled), []);
    assert.throws(() => decideWebhooks({ type: 'SendTest', orgId: 'o', endpointId: 'e', now }, disabled), { code: 'invalid_state', message: /disabled/ });
  });

  test('an attempt begun before the endpoint was enabled again does not disable it; one begun since does', () => {
    const enabledAt = new Date(now.getTime() + 3_600_000);
    const enabledAgain = given(create('e'), disable(now, now), { type: 'UpdateEndpoint', orgId: 'o', endpointId: 'e', enabled: true, now: enabledAt });
    assert.deepEqual(decideWebhooks(disable(new Date(enabledAt.getTime() - 1), enabledAt), enabledAgain), [], 'its failure was answered before the enable');
    assert.equal(decideWebhooks(disable(enabledAt, enabledAt), enabledAgain).length, 1);
    // An enable of an endpoint already enabled is no enable again.
    const updated = given(create('e'), { type: 'UpdateEndpoint', orgId: 'o', endpointId: 'e', enabled: true, now: enabledAt });
    assert.equal(decideWebhooks(disable(now, enabledAt), updated).length, 1);
  });
});

describe('retry schedule', () => {
  test('at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed; jitter adds up to 10 %', () => {
    const failed = outcomeOf(500, null);
    assert.deepEqual(
      Array.from({ length: MAX_ATTEMPTS }, (_, i) => nextAttemptDelay(i + 1, failed, 0)),
      [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, null],
    );
    assert.equal(nextAttemptDelay(1, failed, 0.999), 5_499);
    assert.equal(nextAttemptDelay(1, outcomeOf(200, null), 0), null);
    assert.equal(nextAttemptDelay(1, outcomeOf(410, null), 0), null);
  });

  test('Retry-After on 429 and 503 only', () => {
    assert.equal(nextAttemptDelay(1, outcomeOf(429, 60_000), 0), 60_000);
    assert.equal(nextAttemptDelay(1, outcomeOf(503, 60_000), 0), 60_000);
    assert.equal(nextAttemptDelay(1, outcomeOf(500, 60_000), 0), 5_000);
    // Never sooner than the schedule: a Retry-After of 0 or 1 s must not burn the attempts.
    assert.equal(nextAttemptDelay(1, outcomeOf(503, 0), 0), 5_000);
    assert.equal(nextAttemptDelay(3, outcomeOf(429, 1_000), 0), 30 * 60_000);
    assert.equal(parseRetryAfter('120', 0), 120_000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 1970 00:01:00 GMT', 0), 60_000);
    assert.equal(parseRetryAfter('soon', 0), null);
    // Real seconds: at TIME_SCALE=3600 a 2 s Retry-After is 2 h of service time; capped at 10 h of real time.
    assert.equal(retryAfterOnServiceClock(2_000, 3600), 7_200_000);
    assert.equal(retryAfterOnServiceClock(48 * 3_600_000, 1), 10 * 3_600_000);
  });
});

describe('webhook URLs', () => {
  test('https, or http on allowed hosts; no credentials or fragments', () => {
    const policy = { allowHttpHosts: ['hooks.local'], allowPrivate: false };
    assert.ok('url' in checkWebhookUrl('https://example.com/x', policy));
    assert.ok('url' in checkWebhookUrl('http://hooks.local:8080/x', policy));
    assert.ok('error' in checkWebhookUrl('http://example.com/x', policy));
    assert.ok('error' in checkWebhookUrl('https://a:b@example.com/x', policy));
    assert.ok('error' in checkWebhookUrl('https://example.com/x#y', policy));
    assert.ok('error' in checkWebhookUrl('javascript:alert(1)', policy));
  });
});
