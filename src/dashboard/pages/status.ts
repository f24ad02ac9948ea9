// A video's status as a badge: the word itself is always shown, so colour is never the only signal.
import type { VideoStatus } from '../../domain/platform.ts';
import { html, type Html } from './html.ts';

export function statusBadge(status: VideoStatus): Html {
  return html`<span class="badge status-${status}">${status}</span>`;
}
