// Endpoint secrets are needed in clear at every send (they are HMAC keys), so they cannot be
// hashed like API keys. They are sealed with AES-256-GCM under one server key instead, and
// only the sealed form goes into the log and the read model: the log alone signs nothing.
//
// The key comes from WEBHOOK_KEY (base64 or hex of 32 bytes), or else from
// `${DATA_DIR}/webhook.key`, created with mode 0600 on first use. Every process that runs the
// API or the webhook sender must see the same key; losing it makes every endpoint's secret
// unusable (rotate them all).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const VERSION = 'v1';
const SECRET_PREFIX = 'whsec_';

export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static fromKey(key: Buffer): SecretBox {
    if (key.length !== 32) throw new Error('the webhook key must be 32 bytes');
    return new SecretBox(key);
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, each base64url. */
  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed webhook secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** A new endpoint secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks' form). */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The HMAC key of a secret: the bytes its base64 part stands for. */
export function signingKeyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

function parseKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new Error('WEBHOOK_KEY must be 32 bytes, as base64 or hex');
  return key;
}

/** The server's webhook key: WEBHOOK_KEY, or the data folder's key file (made when missing). */
export function loadSecretBox(webhookKey: string | null, dataDir: string): SecretBox {
  if (webhookKey) return SecretBox.fromKey(parseKey(webhookKey));
  const file = path.join(dataDir, 'webhook.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    try {
      // 'wx': two processes starting at once must not each write a different key.
      writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return SecretBox.fromKey(parseKey(readFileSync(file, 'utf8')));
}
