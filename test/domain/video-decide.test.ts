import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DAY_MS, HOUR_MS } from '../../src/clock.ts';
import type { KeyMode } from '../../src/domain/platform.ts';
import { decideVideo, type CollectedSnapshot, type VideoCommand } from '../../src/domain/video-decide.ts';
import {
  evolveVideo,
  initialVideoState,
  metadataKey,
  type FailureReason,
  type VideoEvent,
  type VideoState,
} from '../../src/domain/video.ts';
import { deciderSpec } from './decider-spec.ts';

const given = deciderSpec<VideoCommand, VideoEvent, VideoState>({ decide: decideVideo, evolve: evolveVideo, initialState: initialVideoState });

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms);
const iso = (ms: number) => at(ms).toISOString();

const videoId = 'vid_1';
const orgId = 'org_1';
const metadata = { title: 'A video', creator: 'someone', description: 'words' };

function collected(n: number): CollectedSnapshot {
  return { snapshotId: `snap_${n}`, provider: 'simulator', metrics: { views: String(1000 * (n + 1)), likes: String(n) }, metadata };
}

function trackCommand(overrides: Partial<Extract<VideoCommand, { type: 'Track' }>> = {}): VideoCommand {
  return {
    type: 'Track',
    videoId,
    jobId: 'job_1',
    orgId,
    keyId: 'key_1',
    mode: 'live',
    videoLink: 'https://youtu.be/dQw4w9WgXcQ',
    platform: 'youtube',
    platformId: 'dQw4w9WgXcQ',
    durationDays: 1,
    availableFunds: 100_000_000,
    firstSnapshot: collected(0),
    now: at(0),
    ...overrides,
  };
}

// ---- past events ------------------------------------------------------------------------------

function tracked(durationDays = 1, mode: KeyMode = 'live'): VideoEvent[] {
  return [
    {
      type: 'VideoTracked',
      data: {
        videoId,
        jobId: 'job_1',
        orgId,
        keyId: 'key_1',
        mode,
        videoLink: 'https://youtu.be/dQw4w9WgXcQ',
        platform: 'youtube',
        platformId: 'dQw4w9WgXcQ',
        durationDays,
        startedAt: iso(0),
        metadata,
      },
    },
    snapshotRecorded(0, mode),
  ];
}

function snapshotRecorded(slot: number, mode: KeyMode = 'live', when = slot * HOUR_MS): VideoEvent {
  const s = collected(slot);
  return {
    type: 'SnapshotRecorded',
    data: {
      videoId,
      orgId,
      mode,
      slot,
      snapshotId: s.snapshotId,
      snapshotTime: iso(when),
      provider: s.provider,
      metrics: s.metrics,
      price: mode === 'live' ? 15_000 : 0,
    },
  };
}

function collectionFailed(slot: number, consecutiveFailures: number, reason: FailureReason = 'unreachable'): VideoEvent {
  return { type: 'CollectionFailed', data: { videoId, orgId, slot, at: iso(slot * HOUR_MS), reason, message: `failed: ${reason}`, consecutiveFailures } };
}

const paused = (when: number, mode: KeyMode = 'live'): VideoEvent => ({ type: 'VideoPaused', data: { videoId, orgId, mode, at: iso(when) } });
const resumed = (when: number, nextSlot: number, mode: KeyMode = 'live'): VideoEvent => ({
  type: 'VideoResumed',
  data: { videoId, orgId, mode, at: iso(when), nextSlot },
});
const completed = (when: number, reason: 'period_ended' | 'stopped' = 'stopped'): VideoEvent => ({
  type: 'VideoCompleted',
  data: { videoId, orgId, mode: 'live', at: iso(when), previousStatus: 'monitoring', reason },
});
const errored = (when: number): VideoEvent => ({ type: 'VideoErrored', data: { videoId, orgId, mode: 'live', at: iso(when), isDeleted: false, message: 'gone' } });
const cancelled = (when: number): VideoEvent => ({ type: 'VideoCancelled', data: { videoId, orgId, mode: 'live', at: iso(when), previousStatus: 'monitoring' } });

/** A 1-day live video in each state, reached at 2 h. */
const inState = {
  monitoring: tracked(),
  paused: [...tracked(), paused(2 * HOUR_MS)],
  completed: [...tracked(), completed(2 * HOUR_MS)],
  error: [...tracked(), errored(2 * HOUR_MS)],
  cancelled: [...tracked(), cancelled(2 * HOUR_MS)],
} as const;

const status = (state: VideoState) => (state.exists ? state.status : 'none');

// ---- commands ---------------------------------------------------------------------------------

const recordSnapshot = (slot: number, when = slot * HOUR_MS): VideoCommand => ({ type: 'RecordSnapshot', slot, snapshot: collected(slot), now: at(when) });
const recordFailure = (slot: number, reason: FailureReason = 'unreachable', when = slot * HOUR_MS): VideoCommand => ({
  type: 'RecordCollectionFailure',
  slot,
  reason,
  message: `failed: ${reason}`,
  now: at(when),
});
const pause = (when: number): VideoCommand => ({ type: 'Pause', now: at(when) });
const resume = (when: number): VideoCommand => ({ type: 'Resume', now: at(when) });
const complete = (when: number): VideoCommand => ({ type: 'Complete', now: at(when) });
const stop = (when: number): VideoCommand => ({ type: 'Stop', now: at(when) });
const cancel = (when: number): VideoCommand => ({ type: 'Cancel', now: at(when) });

// ---- specs ------------------------------------------------------------------------------------

describe('Track', () => {
  it('records VideoTracked and the slot-0 snapshot, priced 15 000 micros in live mode', () => {
    const { state } = given([]).when(trackCommand()).then(tracked(1, 'live'));
    assert.deepStrictEqual(state, {
      exists: true,
      videoId,
      orgId,
      mode: 'live',
      platform: 'youtube',
      platformId: 'dQw4w9WgXcQ',
      status: 'monitoring',
      startedAt: T0,
      durationDays: 1,
      nextSlot: 1,
      snapshots: 1,
      consecutiveFailures: 0,
      isDeleted: false,
      metadataKey: metadataKey(metadata),
    });
  });

  it('prices the slot-0 snapshot at 0 in test mode', () => {
    given([]).when(trackCommand({ mode: 'test' })).then(tracked(1, 'test'));
  });

  for (const days of [1, 2, 7, 29, 30]) {
    it(`accepts ${days} day(s)`, () => {
      given([]).when(trackCommand({ durationDays: days })).then(tracked(days));
    });
  }

  for (const days of [0, 31, -1, 1.5, 0.5, 30.000001, Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`refuses ${days} days`, () => {
      given([]).when(trackCommand({ durationDays: days })).then({ code: 'invalid_argument', message: 'duration_days must be an integer from 1 to 30' });
    });
  }

  it('refuses a live track when available funds are one micro short of the estimated cost', () => {
    given([])
      .when(trackCommand({ durationDays: 30, availableFunds: 10_800_000 - 1 }))
      .then({ code: 'insufficient_balance', message: 'Insufficient balance' });
  });

  it('refuses a live track with no funds, or negative available funds (usage above balance)', () => {
    given([]).when(trackCommand({ availableFunds: 0 })).then('insufficient_balance');
    given([]).when(trackCommand({ availableFunds: -15_000 })).then('insufficient_balance');
  });

  it('accepts a live track when available funds equal the estimated cost exactly', () => {
    given([]).when(trackCommand({ durationDays: 30, availableFunds: 10_800_000 })).then(tracked(30));
    given([]).when(trackCommand({ durationDays: 1, availableFunds: 360_000 })).then(tracked(1));
  });

  it('skips the balance check in test mode', () => {
    given([]).when(trackCommand({ mode: 'test', availableFunds: 0 })).then(tracked(1, 'test'));
    given([]).when(trackCommand({ mode: 'test', durationDays: 30, availableFunds: -1 })).then(tracked(30, 'test'));
  });

  it('checks the duration before the balance', () => {
    given([]).when(trackCommand({ durationDays: 31, availableFunds: 0 })).then('invalid_argument');
  });

  it('refuses to track the same video id twice', () => {
    given(tracked()).when(trackCommand()).then('already_exists');
  });
});

describe('a video that does not exist', () => {
  for (const command of [recordSnapshot(1), recordFailure(1), pause(0), resume(0), complete(DAY_MS), stop(0), cancel(0)]) {
    it(`refuses ${command.type} with not_found`, () => {
      given([]).when(command).then({ code: 'not_found', message: 'Video not found' });
    });
  }
});

describe('RecordSnapshot', () => {
  it('records the next slot, priced in live mode, stamped with the time of the command', () => {
    const { state } = given(tracked()).when(recordSnapshot(1, HOUR_MS + 90_000)).then([snapshotRecorded(1, 'live', HOUR_MS + 90_000)]);
    assert.ok(state.exists);
    assert.equal(state.nextSlot, 2);
    assert.equal(state.snapshots, 2);
  });

  it('prices the snapshot at 0 in test mode', () => {
    given(tracked(1, 'test')).when(recordSnapshot(1)).then([snapshotRecorded(1, 'test')]);
  });

  it('writes the metadata only when it differs from the current one, which it then becomes', () => {
    const renamed = { ...metadata, title: 'A better title' };
    const command: VideoCommand = { type: 'RecordSnapshot', slot: 1, snapshot: { ...collected(1), metadata: renamed }, now: at(HOUR_MS) };
    const changed = snapshotRecorded(1);
    const { state } = given(tracked()).when(command).then([{ ...changed, data: { ...changed.data, metadata: renamed } } as VideoEvent]);
    assert.ok(state.exists);
    assert.equal(state.metadataKey, metadataKey(renamed));
    given([...tracked(), { ...changed, data: { ...changed.data, metadata: renamed } } as VideoEvent])
      .when({ ...command, slot: 2, snapshot: { ...collected(2), metadata: renamed }, now: at(2 * HOUR_MS) })
      .then([snapshotRecorded(2)]);
  });

  it('sees text that moved from one metadata field to the next as a change', () => {
    const moved = { ...metadata, title: metadata.title.slice(0, -1), creator: metadata.title.slice(-1) + metadata.creator };
    const command: VideoCommand = { type: 'RecordSnapshot', slot: 1, snapshot: { ...collected(1), metadata: moved }, now: at(HOUR_MS) };
    const changed = snapshotRecorded(1);
    given(tracked()).when(command).then([{ ...changed, data: { ...changed.data, metadata: moved } } as VideoEvent]);
  });

  it('is a no-op for a slot already recorded (a second collector saw the same slot)', () => {
    given([...tracked(), snapshotRecorded(1)]).when(recordSnapshot(1)).thenNothing();
    given([...tracked(), snapshotRecorded(1)]).when(recordSnapshot(0)).thenNothing();
  });

  it('is a no-op for a slot already handled by a failure', () => {
    given([...tracked(), collectionFailed(1, 1)]).when(recordSnapshot(1)).thenNothing();
  });

  it('is a no-op for a handled slot even once the video has ended (idempotency first)', () => {
    given([...tracked(), snapshotRecorded(1), completed(HOUR_MS + 1)]).when(recordSnapshot(1)).thenNothing();
  });

  it('accepts a later slot after a gap, and then treats the skipped slots as handled', () => {
    const { state } = given(tracked()).when(recordSnapshot(5)).then([snapshotRecorded(5)]);
    assert.ok(state.exists);
    assert.equal(state.nextSlot, 6);
    given([...tracked(), snapshotRecorded(5)]).when(recordSnapshot(3)).thenNothing();
  });

  for (const s of ['paused', 'completed', 'error', 'cancelled'] as const) {
    it(`is refused for a new slot when the video is ${s}`, () => {
      given(inState[s]).when(recordSnapshot(3)).then({ code: 'not_monitoring', message: 'Video is not being monitored' });
    });
  }

  it('accepts the last slot, 24 x days - 1', () => {
    given(tracked(1)).when(recordSnapshot(23)).then([snapshotRecorded(23)]);
    given(tracked(30)).when(recordSnapshot(719)).then([snapshotRecorded(719)]);
  });

  it('refuses a slot past the last one', () => {
    given(tracked(1)).when(recordSnapshot(24)).then({ code: 'invalid_argument', message: 'slot 24 is past the tracking period' });
    given(tracked(30)).when(recordSnapshot(720)).then('invalid_argument');
  });

  it('makes exactly 24 x days snapshots over a whole period', () => {
    for (const days of [1, 3]) {
      let events = tracked(days);
      for (let slot = 1; slot < 24 * days; slot++) {
        const { state } = given(events).when(recordSnapshot(slot)).then([snapshotRecorded(slot)]);
        assert.ok(state.exists);
        events = [...events, snapshotRecorded(slot)];
      }
      const { state } = given(events).when(recordSnapshot(24 * days)).then('invalid_argument');
      assert.ok(state.exists);
      assert.equal(state.snapshots, 24 * days);
    }
  });
});

describe('RecordCollectionFailure', () => {
  const failed = (slot: number, consecutiveFailures: number, reason: FailureReason = 'unreachable'): VideoEvent => collectionFailed(slot, consecutiveFailures, reason);

  it('records a first failure with a count of 1', () => {
    const { state } = given(tracked()).when(recordFailure(1)).then([failed(1, 1)]);
    assert.ok(state.exists);
    assert.equal(state.status, 'monitoring');
    assert.equal(state.consecutiveFailures, 1);
    assert.equal(state.nextSlot, 2);
  });

  it('does not error after two failures in a row', () => {
    given([...tracked(), failed(1, 1)]).when(recordFailure(2)).then([failed(2, 2)]);
  });

  it('errors the video on the third failure in a row, with is_deleted for a deleted video', () => {
    const { state } = given([...tracked(), failed(1, 1, 'deleted'), failed(2, 2, 'deleted')])
      .when(recordFailure(3, 'deleted'))
      .then([
        failed(3, 3, 'deleted'),
        { type: 'VideoErrored', data: { videoId, orgId, mode: 'live', at: iso(3 * HOUR_MS), isDeleted: true, message: 'failed: deleted' } },
      ]);
    assert.ok(state.exists);
    assert.equal(state.status, 'error');
    assert.equal(state.isDeleted, true);
  });

  for (const reason of ['not_found', 'unreachable'] as const) {
    it(`errors without is_deleted when the third failure is ${reason}`, () => {
      const { state } = given([...tracked(), failed(1, 1), failed(2, 2)])
        .when(recordFailure(3, reason))
        .then([
          failed(3, 3, reason),
          { type: 'VideoErrored', data: { videoId, orgId, mode: 'live', at: iso(3 * HOUR_MS), isDeleted: false, message: `failed: ${reason}` } },
        ]);
      assert.ok(state.exists);
      assert.equal(state.isDeleted, false);
    });
  }

  it('counts again from 1 after a snapshot in between', () => {
    const { state } = given([...tracked(), failed(1, 1), failed(2, 2), snapshotRecorded(3)])
      .when(recordFailure(4))
      .then([failed(4, 1)]);
    assert.ok(state.exists);
    assert.equal(state.status, 'monitoring');
    given([...tracked(), failed(1, 1), failed(2, 2), snapshotRecorded(3), failed(4, 1), failed(5, 2)])
      .when(recordFailure(6))
      .then([failed(6, 3), { type: 'VideoErrored', data: { videoId, orgId, mode: 'live', at: iso(6 * HOUR_MS), isDeleted: false, message: 'failed: unreachable' } }]);
  });

  it('is a no-op for a slot already handled', () => {
    given([...tracked(), failed(1, 1)]).when(recordFailure(1)).thenNothing();
    given([...tracked(), snapshotRecorded(1)]).when(recordFailure(1)).thenNothing();
    given(tracked()).when(recordFailure(0)).thenNothing();
  });

  for (const s of ['paused', 'completed', 'error', 'cancelled'] as const) {
    it(`is refused for a new slot when the video is ${s}`, () => {
      given(inState[s]).when(recordFailure(3)).then({ code: 'not_monitoring', message: 'Video is not being monitored' });
    });
  }

  it('is refused past the last slot (cannot error a video whose period is over)', () => {
    given([...tracked(1), failed(22, 1), failed(23, 2)]).when(recordFailure(24)).then('invalid_argument');
  });
});

describe('RecordCollectionFailure of a slot tried after its hour (a scheduler catching up)', () => {
  const MINUTE_MS = 60_000;
  const lateFailure = (slot: number, consecutiveFailures: number, when: number, reason: FailureReason = 'unreachable'): VideoEvent => ({
    type: 'CollectionFailed',
    data: { videoId, orgId, slot, at: iso(when), reason, message: `failed: ${reason}`, consecutiveFailures },
  });
  const back = 4 * HOUR_MS + 10 * MINUTE_MS; // the scheduler is back after 4 h down

  it('is recorded (the slot is missed) without counting toward error', () => {
    const { state } = given(tracked()).when(recordFailure(1, 'unreachable', back)).then([lateFailure(1, 0, back)]);
    assert.ok(state.exists);
    assert.equal(state.nextSlot, 2);
    assert.equal(state.consecutiveFailures, 0);
  });

  it('three late slots failing in one moment leave the video monitoring; only the slot of the hour just over counts', () => {
    const { state } = given([...tracked(), lateFailure(1, 0, back), lateFailure(2, 0, back)])
      .when(recordFailure(3, 'unreachable', back))
      .then([lateFailure(3, 1, back)]);
    assert.ok(state.exists);
    assert.equal(state.status, 'monitoring');
  });

  it('a platform answer (not found, deleted) counts only within its slot\'s own hour', () => {
    given(tracked()).when(recordFailure(3, 'deleted', back)).then([lateFailure(3, 0, back, 'deleted')]);
    given(tracked()).when(recordFailure(4, 'deleted', back)).then([lateFailure(4, 1, back, 'deleted')]);
  });

  it('a platform that keeps failing after the catch-up still errors after 3 hours', () => {
    const history = [...tracked(), lateFailure(1, 0, back), lateFailure(2, 0, back), lateFailure(3, 1, back), lateFailure(4, 2, 5 * HOUR_MS)];
    given(history)
      .when(recordFailure(5, 'unreachable', 6 * HOUR_MS))
      .then([
        lateFailure(5, 3, 6 * HOUR_MS),
        { type: 'VideoErrored', data: { videoId, orgId, mode: 'live', at: iso(6 * HOUR_MS), isDeleted: false, message: 'failed: unreachable' } },
      ]);
  });

  it('a slot our own limit (quota, rate-limit window) kept us from asking for never counts, on time or not', () => {
    given([...tracked(), collectionFailed(1, 1), collectionFailed(2, 2)])
      .when(recordFailure(3, 'own_limit', 3 * HOUR_MS))
      .then([lateFailure(3, 2, 3 * HOUR_MS, 'own_limit')]);
  });

  it('an unreachable slot recorded when its hour is over counts, as the scheduler records it on time', () => {
    given(tracked()).when(recordFailure(1, 'unreachable', 2 * HOUR_MS)).then([lateFailure(1, 1, 2 * HOUR_MS)]);
    given(tracked()).when(recordFailure(1, 'unreachable', 3 * HOUR_MS)).then([lateFailure(1, 0, 3 * HOUR_MS)]);
  });
});

describe('Pause and Resume', () => {
  it('pauses a monitoring video', () => {
    const { state } = given(tracked()).when(pause(2 * HOUR_MS)).then([paused(2 * HOUR_MS)]);
    assert.equal(status(state), 'paused');
  });

  for (const s of ['paused', 'completed', 'error', 'cancelled'] as const) {
    it(`pause is a no-op when the video is ${s}`, () => {
      given(inState[s]).when(pause(3 * HOUR_MS)).thenNothing();
    });
  }

  it('resumes a paused video within its period, at the slot due at that moment', () => {
    const { state } = given(inState.paused).when(resume(5 * HOUR_MS)).then([resumed(5 * HOUR_MS, 5)]);
    assert.ok(state.exists);
    assert.equal(state.status, 'monitoring');
    assert.equal(state.nextSlot, 5);
  });

  it('resumes mid-hour at the next slot; the slots missed while paused are skipped', () => {
    const { state } = given(inState.paused).when(resume(5.5 * HOUR_MS)).then([resumed(5.5 * HOUR_MS, 6)]);
    assert.ok(state.exists);
    assert.equal(state.nextSlot, 6);
    given([...inState.paused, resumed(5.5 * HOUR_MS, 6)]).when(recordSnapshot(4, 5.5 * HOUR_MS)).thenNothing();
    given([...inState.paused, resumed(5.5 * HOUR_MS, 6)]).when(recordSnapshot(6)).then([snapshotRecorded(6)]);
  });

  it('never moves the next slot backwards on resume', () => {
    given([...tracked(), snapshotRecorded(1), snapshotRecorded(2), paused(2 * HOUR_MS + 1)])
      .when(resume(2 * HOUR_MS + 2))
      .then([resumed(2 * HOUR_MS + 2, 3)]);
  });

  it('resume is a no-op once the period has ended (the video completes instead)', () => {
    given(inState.paused).when(resume(DAY_MS)).thenNothing();
    given(inState.paused).when(resume(DAY_MS + HOUR_MS)).thenNothing();
  });

  it('resume just before the end is accepted', () => {
    given(inState.paused).when(resume(DAY_MS - 1)).then([resumed(DAY_MS - 1, 24)]);
  });

  for (const s of ['monitoring', 'completed', 'error', 'cancelled'] as const) {
    it(`resume is a no-op when the video is ${s}`, () => {
      given(inState[s]).when(resume(3 * HOUR_MS)).thenNothing();
    });
  }
});

describe('Complete', () => {
  it('completes a monitoring video at startedAt + days', () => {
    const { state } = given(tracked(2))
      .when(complete(2 * DAY_MS))
      .then([{ type: 'VideoCompleted', data: { videoId, orgId, mode: 'live', at: iso(2 * DAY_MS), previousStatus: 'monitoring', reason: 'period_ended' } }]);
    assert.equal(status(state), 'completed');
  });

  it('is refused before the period has ended', () => {
    given(tracked(2)).when(complete(2 * DAY_MS - 1)).then({ code: 'invalid_state', message: 'Tracking period has not ended' });
    given(tracked(1)).when(complete(0)).then('invalid_state');
  });

  it('completes a paused video too (its period kept running)', () => {
    given(inState.paused)
      .when(complete(DAY_MS + 5))
      .then([{ type: 'VideoCompleted', data: { videoId, orgId, mode: 'live', at: iso(DAY_MS + 5), previousStatus: 'paused', reason: 'period_ended' } }]);
  });

  it('carries the mode of the video', () => {
    given(tracked(1, 'test'))
      .when(complete(DAY_MS))
      .then([{ type: 'VideoCompleted', data: { videoId, orgId, mode: 'test', at: iso(DAY_MS), previousStatus: 'monitoring', reason: 'period_ended' } }]);
  });

  for (const s of ['completed', 'error', 'cancelled'] as const) {
    it(`is a no-op when the video is already ${s}`, () => {
      given(inState[s]).when(complete(DAY_MS)).thenNothing();
      given(inState[s]).when(complete(HOUR_MS)).thenNothing();
    });
  }
});

describe('Stop', () => {
  it('completes a monitoring video early, keeping previous status', () => {
    const { state } = given([...tracked(), snapshotRecorded(1)])
      .when(stop(90 * 60_000))
      .then([{ type: 'VideoCompleted', data: { videoId, orgId, mode: 'live', at: iso(90 * 60_000), previousStatus: 'monitoring', reason: 'stopped' } }]);
    assert.ok(state.exists);
    assert.equal(state.status, 'completed');
    assert.equal(state.snapshots, 2);
  });

  it('takes no further snapshots after a stop', () => {
    given([...tracked(), completed(HOUR_MS / 2)]).when(recordSnapshot(1)).then('not_monitoring');
  });

  it('cannot be resumed after a stop', () => {
    given([...tracked(), completed(HOUR_MS / 2)]).when(resume(HOUR_MS)).thenNothing();
  });

  for (const s of ['paused', 'completed', 'error', 'cancelled'] as const) {
    it(`is refused with not_monitoring when the video is ${s}`, () => {
      given(inState[s]).when(stop(3 * HOUR_MS)).then({ code: 'not_monitoring', message: 'Video is not being monitored' });
    });
  }
});

describe('Cancel', () => {
  for (const s of ['monitoring', 'paused'] as const) {
    it(`cancels a ${s} video`, () => {
      const { state } = given(inState[s])
        .when(cancel(3 * HOUR_MS))
        .then([{ type: 'VideoCancelled', data: { videoId, orgId, mode: 'live', at: iso(3 * HOUR_MS), previousStatus: s } }]);
      assert.equal(status(state), 'cancelled');
    });
  }

  for (const s of ['completed', 'error', 'cancelled'] as const) {
    it(`is refused when the video is ${s}`, () => {
      given(inState[s]).when(cancel(3 * HOUR_MS)).then({ code: 'invalid_state', message: `Video is ${s}; only monitoring or paused videos can be cancelled` });
    });
  }
});
