// What the service reads from its environment, in one place (README lists it), but the platforms'
// credentials, URLs, timeout and quota, which the collectors read (collect/collectors/from-env.ts).
import { isIP } from 'node:net';
import path from 'node:path';

export type Role = 'all' | 'api' | 'projector' | 'scheduler';
const ROLES: readonly Role[] = ['all', 'api', 'projector', 'scheduler'];

export interface Config {
  role: Role;
  host: string;
  port: number;
  /** External PostgreSQL; when absent an embedded server runs in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  timeScale: number;
  smtpUrl: string | undefined;
  mailFrom: string;
  collectorFallback: 'simulator' | null;
  failedAuthLimit: number;
  logLevel: string;
  /** REDIS_URL: the rate limits' store, shared by every API replica (in memory when null). */
  redisUrl: string | null;
  /**
   * TRUST_PROXY: the peers whose X-Forwarded-For, -Proto and -Host are believed (Fastify's
   * `trustProxy`): every peer (true), the listed addresses and ranges, or none (false).
   */
  trustProxy: boolean | string[];
  /** Where people reach the dashboard (invitation links); unset: the address the API listens on. */
  publicUrl: string | null;
  /** Where a projector or scheduler role serves /metrics (the API serves it on its own port). */
  metricsPort: number | null;
  // --- event store (src/eventstore/create.ts) ---
  /** Where the event log lives: PostgreSQL (default; the database above) or EventStoreDB. */
  eventStore: EventStoreKind;
  /** EventStoreDB connection string (esdb://host:2113?tls=false); required with eventstoredb. */
  eventStoreUrl: string | null;
  // --- webhooks (src/notify/webhooks) ---
  /** WEBHOOK_KEY: the key that seals endpoint secrets (32 bytes, base64 or hex); unset: `${dataDir}/webhook.key`. */
  webhookKey: string | null;
  /** WEBHOOK_ALLOW_HOSTS: hosts (comma-separated) an endpoint may reach over plain http. */
  webhookAllowHosts: string[];
  /** WEBHOOK_ALLOW_PRIVATE=1: endpoints may resolve to loopback and private addresses (tests). */
  webhookAllowPrivate: boolean;
  /** WEBHOOK_DELIVERY_RETENTION_DAYS: service days a delivered or failed delivery is kept (default 30). */
  webhookDeliveryRetentionDays: number;
}

export type EventStoreKind = 'postgres' | 'eventstoredb';
const EVENT_STORES: readonly EventStoreKind[] = ['postgres', 'eventstoredb'];

/** WEBHOOK_DELIVERY_RETENTION_DAYS' default (src/notify/webhooks/retention.ts). */
export const DEFAULT_DELIVERY_RETENTION_DAYS = 30;

/**
 * Service time runs this many times faster at most: a day in under a second. A scale far above
 * it took the stored clock past what a date can hold, and every later start failed on it.
 */
export const MAX_TIME_SCALE = 100_000;

const DECIMAL = /^\d+(\.\d+)?$/;
const WHOLE = /^\d+$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Written as a person writes a number: `3600`, `0.5`; not `0x10` or `3e3`, which Number() would also take. */
function positiveNumber(name: string, text: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!DECIMAL.test(text) || value <= 0 || value > max) throw new Error(`${name} must be a positive number up to ${max}, got "${text}"`);
  return value;
}

function positiveWholeNumber(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!WHOLE.test(text) || value <= 0 || !Number.isSafeInteger(value)) throw new Error(`${name} must be a whole number from 1, got "${text}"`);
  return value;
}

function logLevel(text: string | undefined): string {
  if (text === undefined || text === '') return 'info';
  if (!LOG_LEVELS.includes(text)) throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${text}"`);
  return text;
}

/** A TCP port; 0 asks the OS for a free one (tests; the bound port is in `${DATA_DIR}/service.json`). */
function port(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!WHOLE.test(text) || value > 65_535) throw new Error(`${name} must be a port number (0-65535; 0 lets the OS choose), got "${text}"`);
  return value;
}

/** proxy-addr's names for ranges, which Fastify takes in a list like addresses. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrRange(text: string): boolean {
  const [address = '', prefix, ...more] = text.split('/');
  const family = isIP(address);
  if (family === 0 || more.length > 0) return false;
  return prefix === undefined || (WHOLE.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

function trustProxy(text: string | undefined): boolean | string[] {
  if (text === undefined || text === '' || text === 'false') return false;
  if (text === 'true') return true;
  // Fastify takes a number, but trusts no peer on a hop count alone (any client could send the hops).
  if (WHOLE.test(text)) throw new Error(`TRUST_PROXY does not take a hop count: name the proxy's address (or true), got "${text}"`);
  const entries = text.split(',').map((entry) => entry.trim());
  if (!entries.every((entry) => PROXY_RANGE_NAMES.includes(entry) || isAddressOrRange(entry))) {
    throw new Error(`TRUST_PROXY must be true, or the proxies' addresses and CIDR ranges, comma-separated (e.g. 10.0.0.2,192.168.0.0/16), got "${text}"`);
  }
  return entries;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, argv: string[] = process.argv.slice(2)): Config {
  const role = (argv.find((a) => !a.startsWith('-')) ?? env.ROLE ?? 'all') as Role;
  if (!ROLES.includes(role)) throw new Error(`role must be one of ${ROLES.join(', ')}, got "${role}"`);
  const databaseUrl = env.DATABASE_URL || null;
  const fallback = env.COLLECTOR_FALLBACK ?? (databaseUrl ? '' : 'simulator');
  if (fallback !== '' && fallback !== 'simulator' && fallback !== 'none') throw new Error(`COLLECTOR_FALLBACK must be "simulator" or "none"`);
  return {
    role,
    host: env.HOST || '127.0.0.1',
    port: port('PORT', env.PORT, 3000),
    databaseUrl,
    dataDir: path.resolve(env.DATA_DIR || '.data'),
    timeScale: positiveNumber('TIME_SCALE', env.TIME_SCALE, 1, MAX_TIME_SCALE),
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM || 'vidtrack <no-reply@vidtrack.local>',
    collectorFallback: fallback === 'simulator' ? 'simulator' : null,
    failedAuthLimit: positiveWholeNumber('AUTH_FAILURE_RATE_LIMIT', env.AUTH_FAILURE_RATE_LIMIT, 100),
    logLevel: logLevel(env.LOG_LEVEL),
    redisUrl: env.REDIS_URL || null,
    trustProxy: trustProxy(env.TRUST_PROXY),
    publicUrl: env.PUBLIC_URL || null,
    metricsPort: env.METRICS_PORT ? port('METRICS_PORT', env.METRICS_PORT, 9464) : null,
    ...eventStoreConfig(env),
    webhookKey: env.WEBHOOK_KEY || null,
    webhookAllowHosts: (env.WEBHOOK_ALLOW_HOSTS ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean),
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1',
    webhookDeliveryRetentionDays: positiveNumber('WEBHOOK_DELIVERY_RETENTION_DAYS', env.WEBHOOK_DELIVERY_RETENTION_DAYS, DEFAULT_DELIVERY_RETENTION_DAYS),
  };
}

function eventStoreConfig(env: NodeJS.ProcessEnv): Pick<Config, 'eventStore' | 'eventStoreUrl'> {
  const eventStore = (env.EVENT_STORE || 'postgres') as EventStoreKind;
  if (!EVENT_STORES.includes(eventStore)) throw new Error(`EVENT_STORE must be one of ${EVENT_STORES.join(', ')}, got "${eventStore}"`);
  const eventStoreUrl = env.EVENTSTORE_URL || null;
  if (eventStore === 'eventstoredb' && !eventStoreUrl) throw new Error('EVENT_STORE=eventstoredb needs EVENTSTORE_URL (e.g. esdb://localhost:2113?tls=false)');
  return { eventStore, eventStoreUrl };
}
