// One-shot `hash`: these run for every snapshot (collection, presentation, webhook bodies), and
// it costs about half of a createHash object's round.
import { hash, randomUUID } from 'node:crypto';

/** A UUID (v4 layout) derived from a name: the same name always gives the same id. */
export function uuidFromName(name: string): string {
  const hex = hash('sha256', name, 'hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function newId(): string {
  return randomUUID();
}

export function jobIdOf(videoId: string): string {
  return `job_${hash('sha256', `job:${videoId}`, 'hex').slice(0, 24)}`;
}

export function snapshotIdOf(videoId: string, slot: number): string {
  return `snap_${hash('sha256', `${videoId}:${slot}`, 'hex').slice(0, 24)}`;
}
