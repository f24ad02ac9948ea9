// How the PostgreSQL log's rows are read and turned into recorded events.
import type { RecordedEvent } from './port.ts';

// bigints travel as text (never through a JS number). The casts keep the column
// names, so every ORDER BY names the table's column (es.events.position):
// a bare `position` there would sort the text output column ('10' < '9').
// recorded_at travels as epoch milliseconds: pg's timestamp parser cost about 1 µs per event
// of a log read, and a Date from a number costs next to nothing.
export const EVENT_COLUMNS = `position::text, transaction_id::text, stream_id, revision::text, event_id, type, data, metadata,
  round(date_part('epoch', recorded_at) * 1000) as recorded_at_ms`;

export interface EventRow {
  position: string;
  transaction_id: string;
  stream_id: string;
  revision: string;
  event_id: string;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  recorded_at_ms: number;
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    revision: BigInt(row.revision),
    position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.position) },
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    recordedAt: new Date(row.recorded_at_ms),
  };
}
