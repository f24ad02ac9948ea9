import type { AccountEvent } from './account.ts';
import type { MemberEvent } from './members.ts';
import type { TrackingClaimEvent } from './tracking-claim.ts';
import type { VideoEvent } from './video.ts';
import type { WebhookEvent } from './webhooks.ts';
import type { AlertEvent } from './alerts.ts';

/** Every event the service writes to the log. */
export type DomainEvent = VideoEvent | AccountEvent | TrackingClaimEvent | MemberEvent | WebhookEvent | AlertEvent;
export type DomainEventType = DomainEvent['type'];
