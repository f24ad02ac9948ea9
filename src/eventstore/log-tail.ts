// The newest stretch of the log this process has read, shared by its subscriptions. The
// projector and the reactors follow the same log a few pages apart; without this each page was
// read, sent and parsed once per subscription (a third of the webhook reactor's cost at a
// collection burst).
//
// Why a remembered page is still a true answer: a reader only sees events of transactions
// below the server's horizon (postgres.ts), so what becomes visible later always sorts after
// what was visible before. Any read from position P is therefore a prefix of every later read
// from P, and the stretch below keeps exactly the visible events between `start` and
// `frontier`, none missing.
import { comparePositions, type Position, type RecordedEvent } from './port.ts';

export class LogTail {
  /**
   * @param keep at least this many events are kept, at most twice as many. The readers woken by
   * one append read it together (postgres.ts), so a page or two is enough; more only kept events
   * alive into the old generation of Node's heap (20,000 collected 1-3% slower).
   */
  constructor(private readonly keep = 5_000) {}

  private start: Position | null = null;
  private frontier: Position | null = null;
  private events: RecordedEvent[] = [];
  /** When a read that found nothing beyond `frontier` was sent (performance.now()); -Infinity when none did. */
  private headReadAt = Number.NEGATIVE_INFINITY;

  /**
   * The kept events after `after`, up to `limit` (none, at the head, when a read since the
   * reader woke found nothing beyond), or null for the database.
   * A page shorter than `limit` tells its reader that it has caught up, so it is `upToDate` only
   * when a read sent after the reader last woke (`wokeAt`) found nothing beyond: whatever was
   * appended since has then woken the reader again, as a fresh read would have left it. A page
   * that is not may lack what woke the reader, who reads on from its end at once.
   */
  serve(after: Position, limit: number, wokeAt: number): { page: RecordedEvent[]; upToDate: boolean } | null {
    if (!this.start || !this.frontier || comparePositions(after, this.start) < 0) return null;
    const beyond = comparePositions(after, this.frontier);
    if (beyond > 0) return null;
    if (beyond === 0) return this.headReadAt >= wokeAt ? { page: [], upToDate: true } : null;
    const first = this.indexAfter(after);
    const page = this.events.slice(first, first + limit);
    return { page, upToDate: page.length === limit || this.headReadAt >= wokeAt };
  }

  /** What a database read after `after` with `limit`, sent at `readAt`, returned: every visible event after it, up to `limit`. */
  remember(after: Position, limit: number, page: readonly RecordedEvent[], readAt: number): void {
    if (page.length === 0) {
      if (this.frontier && comparePositions(after, this.frontier) === 0) this.headReadAt = Math.max(this.headReadAt, readAt);
      return;
    }
    const end = page[page.length - 1]!.position;
    const atHead = page.length < limit;
    if (this.frontier && comparePositions(after, this.frontier) === 0) {
      // The common case, a read where the last one ended: in place (this runs on every read).
      for (const event of page) this.events.push(event);
    } else if (this.start && this.frontier && comparePositions(after, this.start) >= 0 && comparePositions(after, this.frontier) < 0) {
      // Overlaps the stretch: keep what comes before the page, then the page.
      const beyond = comparePositions(end, this.frontier);
      if (beyond < 0) return; // an older, shorter read: nothing new
      if (beyond === 0) {
        if (atHead) this.headReadAt = Math.max(this.headReadAt, readAt);
        return;
      }
      this.events = this.events.slice(0, this.indexAfter(after)).concat(page);
    } else {
      this.start = after;
      this.events = [...page];
    }
    this.frontier = end;
    this.headReadAt = atHead ? readAt : Number.NEGATIVE_INFINITY;
    // Trimmed only once it is twice the size: a trim copies what is kept.
    if (this.events.length > 2 * this.keep) {
      const dropped = this.events.length - this.keep;
      this.start = this.events[dropped - 1]!.position;
      this.events = this.events.slice(dropped);
    }
  }

  /** The index of the first kept event after `after` (binary search: events are in log order). */
  private indexAfter(after: Position): number {
    let low = 0;
    let high = this.events.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (comparePositions(this.events[middle]!.position, after) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
