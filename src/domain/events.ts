import type { AccountEvent } from './account.ts';
import type { TrackingClaimEvent } from './tracking-claim.ts';
import type { VideoEvent } from './video.ts';

/** Every event the service writes to the log. */
export type DomainEvent = VideoEvent | AccountEvent | TrackingClaimEvent;
export type DomainEventType = DomainEvent['type'];
