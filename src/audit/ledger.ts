// An organization's billing history, folded from the log alone: deposits, charges and the
// snapshots they bill. Pure: the audit script feeds it events, tests feed it anything.
import type { DomainEvent } from '../domain/events.ts';
import { SNAPSHOT_PRICE, type Micros } from '../domain/money.ts';
import type { KeyMode } from '../domain/platform.ts';

export interface LedgerEntry {
  at: string;
  kind: 'deposit' | 'charge';
  amount: Micros;
  /** Snapshots billed by a charge. */
  snapshots?: number;
  reference?: string | null;
}

export interface Ledger {
  orgId: string;
  entries: LedgerEntry[];
  balance: Micros;
  totalCharged: Micros;
  /** Live snapshots recorded (each billable), and what they cost. */
  liveSnapshots: number;
  liveCost: Micros;
  testSnapshots: number;
  snapshotsCharged: number;
  /** Live snapshots per video, for the report. */
  snapshotsByVideo: Map<string, number>;
  /**
   * The videos in `monitoring` (GET /usage's active_videos), with their mode. The read model
   * counts moves into and out of monitoring; this holds which videos are in it.
   */
  monitoring: Map<string, KeyMode>;
  /** Rules of billing the log breaks, if any (a doubled slot, a charge for more than was recorded, ...). */
  problems: string[];
}

export function emptyLedger(orgId: string): Ledger {
  return {
    orgId,
    entries: [],
    balance: 0,
    totalCharged: 0,
    liveSnapshots: 0,
    liveCost: 0,
    testSnapshots: 0,
    snapshotsCharged: 0,
    snapshotsByVideo: new Map(),
    monitoring: new Map(),
    problems: [],
  };
}

export function unchargedUsage(ledger: Ledger): Micros {
  return ledger.liveCost - ledger.totalCharged;
}

/** Videos in monitoring of one mode (a mode other than test counts as live, as in the read model). */
export function activeVideos(ledger: Ledger, mode: KeyMode): number {
  let count = 0;
  for (const videoMode of ledger.monitoring.values()) if ((videoMode === 'test') === (mode === 'test')) count++;
  return count;
}

/** The service time an event speaks of (its own timestamp, not when the log stored it). */
export function eventTime(event: DomainEvent): string {
  const data = event.data as { at?: string; snapshotTime?: string; startedAt?: string };
  return data.at ?? data.snapshotTime ?? data.startedAt ?? '';
}

export function orgOf(event: DomainEvent): string | null {
  return (event.data as { orgId?: string }).orgId ?? null;
}

/** Applies one event; `slots` remembers (video, slot) pairs seen, to catch a slot billed twice. */
export function applyToLedger(ledger: Ledger, event: DomainEvent, slots: Set<string>): void {
  switch (event.type) {
    case 'FundsDeposited':
      ledger.balance += event.data.amount;
      ledger.entries.push({ at: event.data.at, kind: 'deposit', amount: event.data.amount, reference: event.data.reference });
      return;
    case 'UsageCharged': {
      const { amount, snapshots, snapshotsChargedTotal } = event.data;
      ledger.balance -= amount;
      ledger.totalCharged += amount;
      ledger.snapshotsCharged += snapshots;
      ledger.entries.push({ at: event.data.at, kind: 'charge', amount, snapshots });
      if (amount !== snapshots * SNAPSHOT_PRICE) ledger.problems.push(`charge at ${event.data.at}: ${amount} micros for ${snapshots} snapshots`);
      if (snapshotsChargedTotal !== ledger.snapshotsCharged) ledger.problems.push(`charge at ${event.data.at}: running total ${snapshotsChargedTotal}, ledger says ${ledger.snapshotsCharged}`);
      if (ledger.snapshotsCharged > ledger.liveSnapshots) ledger.problems.push(`charge at ${event.data.at}: ${ledger.snapshotsCharged} snapshots charged, only ${ledger.liveSnapshots} recorded`);
      return;
    }
    case 'SnapshotRecorded': {
      const { videoId, slot, mode, price } = event.data;
      const key = `${videoId}:${slot}`;
      if (slots.has(key)) ledger.problems.push(`video ${videoId} slot ${slot} recorded twice`);
      slots.add(key);
      if (mode === 'live') {
        ledger.liveSnapshots++;
        ledger.liveCost += price;
        ledger.snapshotsByVideo.set(videoId, (ledger.snapshotsByVideo.get(videoId) ?? 0) + 1);
        if (price !== SNAPSHOT_PRICE) ledger.problems.push(`video ${videoId} slot ${slot}: priced ${price} micros`);
      } else {
        ledger.testSnapshots++;
        if (price !== 0) ledger.problems.push(`test-mode video ${videoId} slot ${slot}: priced ${price} micros`);
      }
      return;
    }
    case 'VideoTracked':
    case 'VideoResumed':
      ledger.monitoring.set(event.data.videoId, event.data.mode);
      return;
    case 'VideoPaused':
    case 'VideoErrored':
    case 'VideoCompleted':
    case 'VideoCancelled':
      ledger.monitoring.delete(event.data.videoId);
      return;
    default:
      return;
  }
}
