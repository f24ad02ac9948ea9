import { decideAccount, type AccountCommand } from '../domain/account-decide.ts';
import { evolveAccount, initialAccountState, type AccountEvent, type AccountState } from '../domain/account.ts';
import {
  decideTrackingClaim,
  evolveTrackingClaim,
  initialTrackingClaimState,
  type TrackingClaimCommand,
  type TrackingClaimEvent,
  type TrackingClaimState,
} from '../domain/tracking-claim.ts';
import { decideVideo, type VideoCommand } from '../domain/video-decide.ts';
import { evolveVideo, initialVideoState, type VideoEvent, type VideoState } from '../domain/video.ts';
import { decideMembers, evolveMembers, initialMembersState, type MemberCommand, type MemberEvent, type MembersState } from '../domain/members.ts';
import { decideWebhooks, evolveWebhooks, initialWebhooksState, type WebhookCommand, type WebhookEvent, type WebhooksState } from '../domain/webhooks.ts';
import { decideAlerts, evolveAlerts, initialAlertsState, type AlertCommand, type AlertEvent, type AlertsState } from '../domain/alerts.ts';
import type { Decider } from './handle.ts';

export const videoDecider: Decider<VideoState, VideoCommand, VideoEvent> = {
  initialState: initialVideoState,
  evolve: evolveVideo,
  decide: decideVideo,
};

export const accountDecider: Decider<AccountState, AccountCommand, AccountEvent> = {
  initialState: initialAccountState,
  evolve: evolveAccount,
  decide: decideAccount,
};

export const trackingClaimDecider: Decider<TrackingClaimState, TrackingClaimCommand, TrackingClaimEvent> = {
  initialState: initialTrackingClaimState,
  evolve: evolveTrackingClaim,
  decide: decideTrackingClaim,
};

export const membersDecider: Decider<MembersState, MemberCommand, MemberEvent> = {
  initialState: initialMembersState,
  evolve: evolveMembers,
  decide: decideMembers,
};

export const webhooksDecider: Decider<WebhooksState, WebhookCommand, WebhookEvent> = {
  initialState: initialWebhooksState,
  evolve: evolveWebhooks,
  decide: decideWebhooks,
};

export const alertsDecider: Decider<AlertsState, AlertCommand, AlertEvent> = {
  initialState: initialAlertsState,
  evolve: evolveAlerts,
  decide: decideAlerts,
};
