// Answers of the read routes kept as bytes while the read models stand still.
//
// Read models change when the projection runner commits a page, which moves the checkpoints,
// and when an operator retries parked events (`admin parked retry`, another process) or a
// rebuild swaps fresh tables in, which need not move them but count themselves on them. Each request carries the version of the read models
// it must see at least (request.view, read-barrier.ts: read from the database after the
// request arrived): the position and that count. An answer read from the read models once
// they were at version V holds everything up to V; it is kept under V and served to requests
// whose view is V exactly, and a lookup at any other version misses. Reads taken while some
// projection has no checkpoint yet are not kept. What depends on the clock (days_remaining)
// is not kept either: bodies are kept as templates with the places of the clock-dependent
// numbers, filled in per request.
import type { FastifyReply } from 'fastify';
import type { Pool } from 'pg';
import { readUsage, type UsageRow } from '../../projections/queries.ts';
import type { Micros } from '../domain/money.ts';
import { comparePositions } from '../eventstore/port.ts';
import type { ReadVersion } from './read-barrier.ts';

interface Entry<V> {
  version: ReadVersion;
  value: V;
  bytes: number;
}

/** Later versions after earlier ones: the count only grows while the position stands. */
function compareVersions(a: ReadVersion, b: ReadVersion): number {
  return comparePositions(a.position, b.position) || a.retries - b.retries;
}

/** Values per key, each valid at one version only; least recently used go first past maxBytes. */
export class VersionCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string, version: ReadVersion): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (compareVersions(entry.version, version) !== 0) return undefined;
    // Most recently used last in the map's order.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, version: ReadVersion, value: V, bytes: number): void {
    const old = this.entries.get(key);
    // A slow read must not replace what a later one kept.
    if (old && compareVersions(old.version, version) > 0) return;
    if (old) this.remove(key, old);
    if (bytes > this.maxBytes / 4) return;
    this.entries.set(key, { version, value, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(oldest, entry);
    }
  }

  /** Forgets `key` if it still holds `value`. */
  delete(key: string, value: V): void {
    const entry = this.entries.get(key);
    if (entry && entry.value === value) this.remove(key, entry);
  }

  get size(): number {
    return this.entries.size;
  }

  private remove(key: string, entry: Entry<V>): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

export interface Hole {
  before: string;
  placeholder: string;
  after: string;
}

/**
 * A JSON body with holes for numbers: the text between them, and the last body filled in
 * (reused while the numbers stay the same, which for days_remaining at four decimals is
 * 8.64 s of service time).
 */
export class NumberTemplate {
  private lastNumbers: readonly number[];
  private lastBody: Buffer;

  private constructor(
    private readonly pieces: readonly Buffer[],
    numbers: readonly number[],
  ) {
    this.lastNumbers = numbers;
    this.lastBody = this.fill(numbers);
  }

  /**
   * Splits `json` at each hole, in order: a hole is a placeholder number between the text
   * before and after it (each hole must occur after the one before, else null: the caller
   * answers without a template). Placeholders are numbers no real value takes, and the text
   * around them names the field, so where they are is where the numbers go.
   */
  static from(json: string, holes: readonly Hole[], numbers: readonly number[]): NumberTemplate | null {
    const pieces: Buffer[] = [];
    let from = 0;
    for (const { before, placeholder, after } of holes) {
      const at = json.indexOf(`${before}${placeholder}${after}`, from);
      if (at < 0) return null;
      pieces.push(Buffer.from(json.slice(from, at + before.length)));
      from = at + before.length + placeholder.length;
    }
    pieces.push(Buffer.from(json.slice(from)));
    return new NumberTemplate(pieces, numbers);
  }

  get bytes(): number {
    return this.pieces.reduce((sum, piece) => sum + piece.length, 0) + this.lastBody.length;
  }

  render(numbers: readonly number[]): Buffer {
    const last = this.lastNumbers;
    let same = last.length === numbers.length;
    for (let i = 0; same && i < numbers.length; i++) same = last[i] === numbers[i];
    if (!same) {
      this.lastBody = this.fill(numbers);
      this.lastNumbers = numbers;
    }
    return this.lastBody;
  }

  private fill(numbers: readonly number[]): Buffer {
    const parts: Buffer[] = [this.pieces[0]!];
    // As fast-json-stringify writes a finite number.
    numbers.forEach((n, i) => parts.push(Buffer.from(`${n}`), this.pieces[i + 1]!));
    return Buffer.concat(parts);
  }
}

/** Placeholder `i` for days_remaining: negative, which no real value of it is (never below 0). */
export function daysPlaceholder(i: number): number {
  return -(i + 1);
}

/** Where placeholder `i` of days_remaining lands in the JSON of the response schemas (created_at follows it). */
export function daysHole(i: number): Hole {
  return { before: '"days_remaining":', placeholder: `${daysPlaceholder(i)}`, after: ',' };
}

/**
 * Organizations' usage rows as of a version of the read models: read once per organization
 * and page of the projector, by GET /usage and by the balance check of POST /videos/track.
 */
export class UsageReads {
  /** Reads in flight are shared: the requests of one page wait for one read. */
  private readonly rows = new VersionCache<Promise<UsageRow | null>>(4 * 2 ** 20);

  constructor(private readonly pool: Pool) {}

  /** `version`: the request's view (the read models have reached it before this read starts). */
  read(orgId: string, version: ReadVersion | null): Promise<UsageRow | null> {
    if (!version) return readUsage(this.pool, orgId);
    const hit = this.rows.get(orgId, version);
    if (hit) return hit;
    const row = readUsage(this.pool, orgId);
    this.rows.set(orgId, version, row, 200 + orgId.length);
    // A failed read is not kept: the next request asks again.
    row.catch(() => this.rows.delete(orgId, row));
    return row;
  }

  /** Balance minus uncharged usage: what a new tracking may spend (DESIGN §8, the 402 check). */
  async availableFunds(orgId: string, version: ReadVersion | null): Promise<Micros> {
    const usage = await this.read(orgId, version);
    return usage ? usage.balance - usage.uncharged : 0;
  }
}

/** Sends a body the route's response schema serialized earlier, as Fastify sends its JSON. */
export function sendJson(reply: object, body: Buffer): FastifyReply {
  return (reply as FastifyReply).type('application/json; charset=utf-8').send(body);
}
