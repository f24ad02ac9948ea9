export const PLATFORMS = ['tiktok', 'youtube', 'instagram', 'twitter'] as const;
export type Platform = (typeof PLATFORMS)[number];

export const VIDEO_STATUSES = ['monitoring', 'completed', 'paused', 'error', 'cancelled'] as const;
export type VideoStatus = (typeof VIDEO_STATUSES)[number];

/** live keys are billed; test keys see only test-mode videos, use the simulator and are never charged. */
export type KeyMode = 'live' | 'test';

export const PLANS = ['free', 'pro', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** Metric values are non-negative integers carried as decimal strings (they may exceed 2^53). */
export interface Metrics {
  views?: string;
  likes?: string;
  comments?: string;
  shares?: string;
  saves?: string;
  retweets?: string;
  replies?: string;
}

export interface VideoMetadata {
  title: string;
  creator: string;
  description: string;
}
