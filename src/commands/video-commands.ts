// The video commands other than track: each loads the stream, decides and appends.
import type { Clock } from '../clock.ts';
import { streamIdOfVideo } from '../domain/video.ts';
import type { EventStore } from '../eventstore/port.ts';
import { videoDecider } from './deciders.ts';
import { handleCommand } from './handle.ts';

export function stopVideo(store: EventStore, clock: Clock, videoId: string) {
  return handleCommand(store, streamIdOfVideo(videoId), videoDecider, { type: 'Stop', now: clock.now() });
}

export function cancelVideo(store: EventStore, clock: Clock, videoId: string) {
  return handleCommand(store, streamIdOfVideo(videoId), videoDecider, { type: 'Cancel', now: clock.now() });
}

export function completeVideo(store: EventStore, clock: Clock, videoId: string) {
  return handleCommand(store, streamIdOfVideo(videoId), videoDecider, { type: 'Complete', now: clock.now() });
}
