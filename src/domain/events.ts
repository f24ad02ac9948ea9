import type { AccountEvent } from './account.ts';
import type { MemberEvent } from './members.ts';
import type { TrackingClaimEvent } from './tracking-claim.ts';
import type { VideoEvent } from './video.ts';

/** Every event the service writes to the log. */
export type DomainEvent = VideoEvent | AccountEvent | TrackingClaimEvent | MemberEvent;
export type DomainEventType = DomainEvent['type'];
