// When a metric alert fires: on the snapshot that meets its condition after one that did not
// (once per crossing), computed on bigints (counts beyond 2^53 stay exact).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { alertFires, decideAlerts, evolveAlerts, initialAlertsState, MAX_ALERTS_PER_ORGANIZATION, scaledPercent, type MetricPoint } from '../../src/domain/alerts.ts';

const H = 3_600_000;
const series = (...values: Array<bigint | number>): MetricPoint[] => values.map((v, i) => ({ time: i * H, value: BigInt(v) }));

describe('alertFires', () => {
  test('crosses: the first snapshot at or above N, once', () => {
    assert.equal(alertFires({ crosses: '100' }, series(50, 99)), false);
    assert.equal(alertFires({ crosses: '100' }, series(50, 99, 100)), true);
    assert.equal(alertFires({ crosses: '100' }, series(50, 99, 100, 150)), false, 'already above: no second alert');
    assert.equal(alertFires({ crosses: '100' }, series(150)), true, 'a first snapshot already above');
    assert.equal(alertFires({ crosses: '100' }, series(150, 90, 120)), true, 'fell below and crossed again');
  });

  test('crosses beyond 2^53 is exact', () => {
    const n = 2n ** 60n + 1n;
    assert.equal(alertFires({ crosses: n.toString() }, series(2n ** 60n, 2n ** 60n)), false);
    assert.equal(alertFires({ crosses: n.toString() }, series(2n ** 60n, n)), true);
  });

  test('grows_per_hour: growth per hour reaches N, once per crossing; scaled by the time between snapshots', () => {
    assert.equal(alertFires({ grows_per_hour: '10' }, series(0, 9)), false);
    assert.equal(alertFires({ grows_per_hour: '10' }, series(0, 9, 19)), true);
    assert.equal(alertFires({ grows_per_hour: '10' }, series(0, 9, 19, 40)), false, 'still fast: no second alert');
    assert.equal(alertFires({ grows_per_hour: '10' }, series(0, 10)), true);
    // 15 in two hours is 7.5 an hour.
    assert.equal(alertFires({ grows_per_hour: '10' }, [{ time: 0, value: 0n }, { time: 2 * H, value: 15n }]), false);
  });

  test('grows_pct_24h: against the newest snapshot at least 24 h older', () => {
    const day = (values: number[]): MetricPoint[] => values.map((v, i) => ({ time: i * H, value: BigInt(v) }));
    const flat = Array(25).fill(100);
    assert.equal(alertFires({ grows_pct_24h: '50' }, day([...flat.slice(0, 24), 149])), false);
    assert.equal(alertFires({ grows_pct_24h: '50' }, day([...flat.slice(0, 24), 150])), true);
    assert.equal(alertFires({ grows_pct_24h: '12.5' }, day([...flat.slice(0, 24), 113])), true);
    assert.equal(alertFires({ grows_pct_24h: '50' }, day([100, 150])), false, 'no snapshot 24 h older yet');
    assert.equal(scaledPercent('12.5'), 12_500_000n);
  });
});

describe('decideAlerts', () => {
  test('create, delete, and delete of an unknown alert', () => {
    const now = new Date('2026-03-01T00:00:00Z');
    const created = decideAlerts({ type: 'CreateAlert', orgId: 'o', alertId: 'a', mode: 'live', videoId: 'all', metric: 'views', condition: { crosses: '5' }, now }, initialAlertsState);
    assert.equal(created[0]!.type, 'MetricAlertCreated');
    const state = created.reduce(evolveAlerts, initialAlertsState);
    assert.equal(decideAlerts({ type: 'DeleteAlert', orgId: 'o', alertId: 'a', now }, state)[0]!.type, 'MetricAlertDeleted');
    assert.throws(() => decideAlerts({ type: 'DeleteAlert', orgId: 'o', alertId: 'b', now }, state), /Alert not found/);
  });

  test('at most 100 alerts: one more is refused as a limit reached', () => {
    const now = new Date('2026-03-01T00:00:00Z');
    const create = (alertId: string) => ({ type: 'CreateAlert' as const, orgId: 'o', alertId, mode: 'live' as const, videoId: 'all', metric: 'views' as const, condition: { crosses: '5' }, now });
    let state = initialAlertsState;
    for (let i = 0; i < MAX_ALERTS_PER_ORGANIZATION; i++) state = decideAlerts(create(`a${i}`), state).reduce(evolveAlerts, state);
    assert.throws(() => decideAlerts(create('one-more'), state), { code: 'limit_reached', message: /at most 100 alerts/ });
  });
});
