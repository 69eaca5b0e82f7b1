/**
 * The subject a client address counts under (docs/limits.md, "Client IP subjects"). A limit
 * per IP only holds if one host cannot appear as many subjects: an IPv4 client reaching a
 * dual-stack server shows as `::ffff:a.b.c.d`, and an IPv6 host is usually given a whole /64
 * (or more) to pick addresses from. So an IPv4-mapped address counts as its IPv4 address, and
 * an IPv6 address counts as its network of `ipv6Prefix` bits.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { InvalidInputError } from './errors.ts';

/** ipSubject's options. */
export interface IpSubjectOptions {
  /** The IPv6 network bits that make one subject (0-128). Default 56: a home or small site. */
  ipv6Prefix?: number;
}

/** What an address that is none (missing, or not an IP address) counts under. */
const UNKNOWN = 'ip:unknown';

/**
 * A valid subject for a client address: `ip:203.0.113.7` for IPv4 (and IPv4-mapped IPv6),
 * `ip:2001:db8:0:100::_56` for IPv6 (the network, `_`, its prefix length), `ip:unknown` for a
 * missing or unparsable address.
 *
 * @example
 * ```ts
 * const attempt = await tollgate.limits.admit(ipSubject(req.socket.remoteAddress), { policy: "signIn" });
 * ```
 */
export function ipSubject(address: string | undefined | null, options: IpSubjectOptions = {}): string {
  const prefix = options.ipv6Prefix ?? 56;
  if (typeof prefix !== 'number' || !Number.isInteger(prefix) || prefix < 0 || prefix > 128) {
    throw new InvalidInputError(`ipv6Prefix must be a whole number 0..128 (got ${String(prefix)})`);
  }
  if (typeof address !== 'string') return UNKNOWN;
  // A zone (fe80::1%eth0) names the host's interface, not the client; brackets come from URLs.
  const bare = address
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/%.*$/, '');
  if (isIPv4(bare)) return `ip:${bare}`;
  if (!isIPv6(bare)) return UNKNOWN;
  const groups = ipv6Groups(bare);
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (mapped) return `ip:${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  return `ip:${ipv6Text(masked(groups, prefix))}_${prefix}`;
}

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 part included). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const front = parse(head);
  const back = parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The groups with every bit past `prefix` cleared. */
function masked(groups: readonly number[], prefix: number): number[] {
  return groups.map((group, i) => {
    const keep = Math.min(16, Math.max(0, prefix - 16 * i));
    return keep === 0 ? 0 : group & (0xffff << (16 - keep)) & 0xffff;
  });
}

/** The RFC 5952 text of eight groups: lower case, the longest run of two or more zero groups as `::`. */
function ipv6Text(groups: readonly number[]): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`;
}
