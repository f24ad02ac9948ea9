import { createHash, randomUUID } from 'node:crypto';

/** A UUID (v4 layout) derived from a name: the same name always gives the same id. */
export function uuidFromName(name: string): string {
  const hex = createHash('sha256').update(name).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function newId(): string {
  return randomUUID();
}

export function jobIdOf(videoId: string): string {
  return `job_${createHash('sha256').update(`job:${videoId}`).digest('hex').slice(0, 24)}`;
}

export function snapshotIdOf(videoId: string, slot: number): string {
  return `snap_${createHash('sha256').update(`${videoId}:${slot}`).digest('hex').slice(0, 24)}`;
}
