// ipSubject (docs/limits.md, "Client IP subjects"): one host is one subject. An IPv4-mapped
// IPv6 address counts as its IPv4 address, an IPv6 address as its network of ipv6Prefix bits,
// and whatever comes in, the answer is a subject tollgate accepts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTollgate } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { ipSubject } from '../src/http.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const SUBJECT = /^[A-Za-z0-9_.:-]{1,128}$/;

describe('ipSubject', () => {
  it('IPv4 counts as itself', () => {
    expect(ipSubject('203.0.113.7')).toBe('ip:203.0.113.7');
  });

  it('an IPv4-mapped IPv6 address counts as the IPv4 address, in either spelling', () => {
    expect(ipSubject('::ffff:203.0.113.7')).toBe('ip:203.0.113.7');
    expect(ipSubject('::FFFF:cb00:7107')).toBe('ip:203.0.113.7');
    expect(ipSubject('0:0:0:0:0:ffff:203.0.113.7')).toBe('ip:203.0.113.7');
  });

  it('IPv6 groups by a /56 by default: every address of one /64 (and of one /56) is one subject', () => {
    const a = ipSubject('2001:db8:0:1ff:1234:5678:9abc:def0');
    expect(a).toBe('ip:2001:db8:0:100::_56');
    expect(ipSubject('2001:db8:0:1ff::1')).toBe(a);
    expect(ipSubject('2001:db8:0:100::')).toBe(a);
    expect(ipSubject('2001:db8:0:200::1')).not.toBe(a);
  });

  it('ipv6Prefix picks the network size; the prefix length is part of the subject', () => {
    expect(ipSubject('2001:db8:0:1ff::1', { ipv6Prefix: 64 })).toBe('ip:2001:db8:0:1ff::_64');
    expect(ipSubject('2001:db8:0:1ff::1', { ipv6Prefix: 128 })).toBe('ip:2001:db8:0:1ff::1_128');
    expect(ipSubject('2001:db8:0:1ff::1', { ipv6Prefix: 0 })).toBe('ip:::_0');
    expect(ipSubject('2001:db8:ffff::', { ipv6Prefix: 36 })).toBe('ip:2001:db8:f000::_36');
    expect(ipSubject('2001:db8::', { ipv6Prefix: 56 })).not.toBe(ipSubject('2001:db8::', { ipv6Prefix: 64 }));
  });

  it('brackets and zones are not part of the host', () => {
    expect(ipSubject('[2001:db8::1]')).toBe(ipSubject('2001:db8::1'));
    expect(ipSubject('fe80::1%eth0', { ipv6Prefix: 64 })).toBe('ip:fe80::_64');
  });

  it('a missing or unparsable address is ip:unknown', () => {
    expect(ipSubject(undefined)).toBe('ip:unknown');
    expect(ipSubject('')).toBe('ip:unknown');
    expect(ipSubject('not an ip; DROP')).toBe('ip:unknown');
    expect(ipSubject('1.2.3.4, 5.6.7.8')).toBe('ip:unknown');
  });

  it('a bad ipv6Prefix is an InvalidInputError', () => {
    for (const ipv6Prefix of [-1, 129, 56.5, Number.NaN]) {
      expect(() => ipSubject('::1', { ipv6Prefix })).toThrow(InvalidInputError);
    }
  });

  it('every answer is a subject limits.admit accepts, and addresses of one network agree', async () => {
    const tg = createTollgate({ memory: true, plans: EXAMPLE_PLANS, policies: { ip: { api: [{ limit: 1000, windowMs: 60_000 }] } } });
    const groups = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.ipV4(), fc.ipV6(), fc.string()), fc.integer({ min: 0, max: 128 }), async (address, ipv6Prefix) => {
        const subject = ipSubject(address, { ipv6Prefix });
        expect(subject).toMatch(SUBJECT);
        await tg.limits.admit(subject, { policy: 'ip' });
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(groups, groups, fc.integer({ min: 0, max: 128 }), (a, b, prefix) => {
        // b shares a's first `prefix` bits.
        const joined = a.map((group, i) => {
          const keep = Math.min(16, Math.max(0, prefix - 16 * i));
          const mask = keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff;
          return (group & mask) | (b[i]! & ~mask & 0xffff);
        });
        const text = (g: number[]) => g.map((x) => x.toString(16)).join(':');
        const mapped = (g: number[]) => g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
        fc.pre(!mapped(a) && !mapped(joined));
        expect(ipSubject(text(joined), { ipv6Prefix: prefix })).toBe(ipSubject(text(a), { ipv6Prefix: prefix }));
      }),
      { numRuns: 500 },
    );
  });
});
