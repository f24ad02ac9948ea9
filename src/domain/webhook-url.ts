// What a webhook endpoint's URL may look like, before any address is looked up. The lookup
// itself (src/notify/webhooks/address-guard.ts) is I/O and happens at creation and again at
// every send, since a name can point somewhere else tomorrow.
import { MAX_URL_LENGTH } from './webhooks.ts';

export interface UrlPolicy {
  /** Hosts (lower case) that may be reached over plain http: WEBHOOK_ALLOW_HOSTS. */
  allowHttpHosts: readonly string[];
  /** WEBHOOK_ALLOW_PRIVATE=1: loopback and private addresses are allowed (tests, a local receiver). */
  allowPrivate: boolean;
}

/** The URL as it will be called, or why it cannot be one. */
export function checkWebhookUrl(text: string, policy: UrlPolicy): { url: URL } | { error: string } {
  if (text.length > MAX_URL_LENGTH) return { error: `url must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { error: 'url must be an absolute URL' };
  }
  if (url.username || url.password) return { error: 'url must not carry a user name or password' };
  if (url.hash) return { error: 'url must not have a fragment' };
  const host = hostOf(url);
  if (url.protocol === 'http:') {
    if (!policy.allowHttpHosts.includes(host)) return { error: 'url must use https (http only for hosts in WEBHOOK_ALLOW_HOSTS)' };
  } else if (url.protocol !== 'https:') {
    return { error: 'url must use https' };
  }
  return { url };
}

/** The host without IPv6 brackets, lower case. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}
