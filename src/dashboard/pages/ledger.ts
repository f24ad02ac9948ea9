// The organization's deposits and charges, replayed from its account stream in the log with
// the audit's own fold (src/audit/ledger.ts): the billing page shows what `npm run audit`
// replays, not a second copy of the rules.
import { applyToLedger, emptyLedger, type Ledger } from '../../audit/ledger.ts';
import { streamIdOfAccount } from '../../domain/account.ts';
import type { DomainEvent } from '../../domain/events.ts';
import type { EventStore } from '../../eventstore/port.ts';

export async function accountLedger(store: Pick<EventStore, 'readStream'>, orgId: string): Promise<Ledger> {
  const ledger = emptyLedger(orgId);
  const slots = new Set<string>();
  for (const event of await store.readStream(streamIdOfAccount(orgId))) {
    applyToLedger(ledger, { type: event.type, data: event.data } as DomainEvent, slots);
  }
  return ledger;
}

/** Charged money per day, for the spend chart. */
export function chargesOf(ledger: Ledger): Array<{ at: Date; value: number }> {
  return ledger.entries.filter((e) => e.kind === 'charge').map((e) => ({ at: new Date(e.at), value: e.amount }));
}
