// An API key's value: its shape (spec §5.2: `vt_live_...`, `vt_test_...`) and the SHA-256
// hash under which the log and the read models know it. The value itself is never stored.
import { createHash, randomBytes } from 'node:crypto';
import type { KeyMode } from './platform.ts';

const KEY_PREFIX = 'vt';

/** What a key can look like; anything else is not looked up at all. */
const KEY_SHAPE = /^vt_(live|test)_[A-Za-z0-9_-]{16,128}$/;

export function newApiKey(mode: KeyMode): string {
  return `${KEY_PREFIX}_${mode}_${randomBytes(24).toString('base64url')}`;
}

export function hasKeyShape(text: string): boolean {
  return KEY_SHAPE.test(text);
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

/** What the dashboard shows of a key after its creation: `vt_live_` and four characters of 32. */
export function keyPrefix(apiKey: string): string {
  return apiKey.slice(0, apiKey.indexOf('_', 3) + 5);
}
