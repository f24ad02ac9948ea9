// Business discovery looks a post up through its owner's username, and only links of the form
// instagram.com/<user>/p/<code>/ carry it. A bare /p/<code>/ link names no owner, and since
// 2025-11-03 oEmbed no longer gives the author either, so such a post cannot be collected.

const POST_KINDS = new Set(['p', 'reel', 'reels', 'tv']);
const USERNAME = /^[A-Za-z0-9._]{1,30}$/;

/** The owner's username in an Instagram post link, or undefined when the link does not name one. */
export function instagramUsername(videoLink: string): string | undefined {
  let url: URL;
  try {
    url = new URL(videoLink);
  } catch {
    return undefined;
  }
  const host = url.hostname.toLowerCase();
  if (host !== 'instagram.com' && !host.endsWith('.instagram.com')) return undefined;
  const [first, second] = url.pathname.split('/').filter((segment) => segment !== '');
  if (first === undefined || second === undefined || POST_KINDS.has(first) || !POST_KINDS.has(second)) return undefined;
  return USERNAME.test(first) ? first : undefined;
}

/** The shortcode a post's permalink points at (for answers that carry no `shortcode` field). */
export function shortcodeFromPermalink(permalink: string): string | undefined {
  try {
    const segments = new URL(permalink).pathname.split('/').filter((segment) => segment !== '');
    const index = segments.findIndex((segment) => POST_KINDS.has(segment));
    return index >= 0 ? segments[index + 1] : undefined;
  } catch {
    return undefined;
  }
}
