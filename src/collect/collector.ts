import type { Metrics, Platform, VideoMetadata } from '../domain/platform.ts';

/** A video as a collector needs it: which platform, and the platform's own id. */
export interface VideoRef {
  readonly platform: Platform;
  readonly platformId: string;
  readonly videoLink: string;
  /** Index of the hourly slot being collected (0 at track time). */
  readonly slot: number;
}

export type FetchResult =
  | { readonly status: 'ok'; readonly metrics: Metrics; readonly metadata: VideoMetadata; readonly provider: string }
  /** Absent, private or deleted: 404 at track time, the `error` path while tracking. */
  | { readonly status: 'not_found'; readonly deleted: boolean; readonly message: string }
  /**
   * Unreachable, timed out, 5xx, quota or rate limited: 502 at track time, the slot is retried.
   * `ownLimit`: our side held the call back (our quota is spent, a rate-limit window or a
   * Retry-After is running): it says nothing about the video, so a slot it costs is missed
   * without counting toward `error`.
   */
  | { readonly status: 'unavailable'; readonly message: string; readonly retryAfter?: Date; readonly ownLimit?: true }
  /** The platform answered something we cannot read: the spec's 500 at track time. */
  | { readonly status: 'invalid'; readonly message: string };

export interface Collector {
  /** Name written into each snapshot's `provider` field. */
  readonly name: string;
  /** One result per ref, in the same order. Batches internally where the API allows. */
  collect(refs: readonly VideoRef[]): Promise<FetchResult[]>;
}
