// SSRF guard: an endpoint must not make the service call into its own network. The host is
// resolved and every address it gives is checked (an attacker's name may resolve to both a
// public and a private address); done when an endpoint is saved and again before every send.
// The check and the connection resolve separately, so a name that changes between the two
// (DNS rebinding) could still slip by; sends therefore connect to the address that was checked
// (see sender.ts: the `lookup` it passes pins the connection to it).
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { hostOf, type UrlPolicy } from '../../domain/webhook-url.ts';

const forbidden = new BlockList();
// IPv4: "this" network, private, carrier-grade NAT, loopback, link-local (and the cloud
// metadata address 169.254.169.254 in it), IETF protocol assignments, test nets, benchmarking,
// multicast and reserved, broadcast.
const FORBIDDEN_IPV4 = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const;
for (const [net, prefix] of FORBIDDEN_IPV4) forbidden.addSubnet(net, prefix, 'ipv4');
// IPv6: unspecified, loopback, unique local, link-local, site-local, multicast, documentation,
// Teredo (its IPv4 address is hidden), local-use NAT64, and the AWS IPv6 metadata address
// fd00:ec2::254 (in fc00::/7).
forbidden.addAddress('::', 'ipv6');
forbidden.addAddress('::1', 'ipv6');
for (const [net, prefix] of [['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['2001::', 32], ['64:ff9b:1::', 48]] as const) {
  forbidden.addSubnet(net, prefix, 'ipv6');
}
// IPv6 addresses that carry an IPv4 address reach it (NAT64, 6to4, mapped, translated
// ::ffff:0:0:0/96, compatible): each forbidden IPv4 range is forbidden inside them too, whatever
// form the address is written in.
const EMBEDDINGS: ReadonlyArray<{ at: (hi: string, lo: string) => string; bits: number }> = [
  { at: (hi, lo) => `64:ff9b::${hi}:${lo}`, bits: 96 },
  { at: (hi, lo) => `2002:${hi}:${lo}::`, bits: 16 },
  { at: (hi, lo) => `::ffff:${hi}:${lo}`, bits: 96 },
  { at: (hi, lo) => `::ffff:0:${hi}:${lo}`, bits: 96 },
  { at: (hi, lo) => `::${hi}:${lo}`, bits: 96 },
];
for (const [net, prefix] of FORBIDDEN_IPV4) {
  const [a, b, c, d] = net.split('.').map(Number) as [number, number, number, number];
  const [hi, lo] = [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  for (const { at, bits } of EMBEDDINGS) forbidden.addSubnet(at(hi, lo), bits + prefix, 'ipv6');
}

/** Loopback, private, link-local, metadata or otherwise not a public address. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return forbidden.check(address, 'ipv4');
  if (family === 6) return forbidden.check(address, 'ipv6');
  return true;
}

export type Resolved = { address: string; family: 4 | 6 } | { error: string };

/** The address a send to `url` connects to, or why it must not. */
export async function resolveEndpoint(url: URL, policy: UrlPolicy): Promise<Resolved> {
  const host = hostOf(url);
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch {
      return { error: `url's host ${host} does not resolve` };
    }
  }
  if (addresses.length === 0) return { error: `url's host ${host} does not resolve` };
  if (!policy.allowPrivate && addresses.some((a) => isForbiddenAddress(a.address))) {
    return { error: 'url must not point to a loopback, private, link-local or metadata address' };
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
