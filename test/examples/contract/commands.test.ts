// Redis commands per request (issue "Hot path": one round trip per request), counted with
// MONITOR on a redis-server of this file's own, against both example servers: the key check and
// the admit (with the credit pre-check) are one script, so a free request is 1 command, a usage
// poll 1, a charged transcript 2 (check + admit + pre-check, then the charge), a comments page
// 1 plus 1 when the page is charged. The deny cache answers a key denied with nothing left, and
// an IP over its failed checks, from memory: 0 commands. Commands scripts run inside Redis are
// not counted (MONITOR shows them as `[0 lua]`); only what the server sent over the wire is.
// Nor are the polls of the service's event consumers (shared/events/), which run beside the
// requests, not for them.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawCommand, startRedisServer, type RedisServer } from '../../helpers/redisServer.ts';
import { ADAPTERS, type Harness, type Reply, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

/** A consumer's poll: the scripts of its loop (by function name, or by its deployment-wide keys under EVALSHA), and its SCAN for outboxes. */
const CONSUMER_POLL = /"tg[0-9a-f]{10}_(?:eventsGroup|eventsPending|readEvents|ackEvents|eventsForget)"|:\{events\}:(?:groups|scan)"|\] "SCAN" /;

/** MONITOR on one server: the commands clients sent, as its raw lines. */
class Monitor {
  private readonly lines: string[] = [];
  private buffered = '';

  private constructor(
    private readonly port: number,
    private readonly socket: net.Socket,
  ) {
    socket.on('data', (chunk) => {
      this.buffered += chunk.toString('utf8');
      const parts = this.buffered.split('\r\n');
      this.buffered = parts.pop()!;
      this.lines.push(...parts);
    });
  }

  static async start(port: number): Promise<Monitor> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const monitor = new Monitor(port, socket);
    socket.write('MONITOR\r\n');
    await monitor.until((line) => line === '+OK');
    return monitor;
  }

  /**
   * The commands sent while `action` ran, by clients (not by scripts), on keys under `prefix`.
   * Markers sent before the action and after its last reply bracket what it sent: MONITOR
   * shows commands in the order Redis ran them, but its lines reach us a little later.
   */
  async during(prefix: string, action: () => Promise<unknown>): Promise<string[]> {
    const from = await this.mark();
    await action();
    const to = await this.mark();
    return this.lines.slice(from + 1, to).filter((line) => !/^\+[\d.]+ \[\d+ lua\]/.test(line) && !CONSUMER_POLL.test(line) && line.includes(`"${prefix}`));
  }

  /** Sends a marker and waits for MONITOR to show it: the index of its line. */
  private async mark(): Promise<number> {
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    await rawCommand(this.port, ['ECHO', marker]);
    return this.until((line) => line.includes(marker));
  }

  private async until(seen: (line: string) => boolean): Promise<number> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const at = this.lines.findIndex(seen);
      if (at >= 0) return at;
      if (Date.now() > deadline) throw new Error('MONITOR did not show the line in 5 s');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The command name and the script's first key of a MONITOR line, e.g. `FCALL {acct_x}:a`. */
const brief = (line: string) => /"(\w+)"(?: "(?:[0-9a-f]{40}|tg[0-9a-f]{10}_\w+)" "\d+" "([^"]*)")?/.exec(line)?.slice(1).filter(Boolean).join(' ') ?? line;

describe.each(ADAPTERS)('$name server: Redis commands per request', (adapter) => {
  let redis: RedisServer;
  let monitor: Monitor;
  let h: Harness;
  const prefix = `cmd-${adapter.name}-${randomBytes(3).toString('hex')}`;
  beforeAll(async () => {
    redis = await startRedisServer();
    h = await startHarness(adapter, 'commands', { redisUrl: redis.url, prefix });
    monitor = await Monitor.start(redis.port);
  });
  afterAll(async () => {
    monitor?.close();
    await h?.close();
    await redis?.stop();
  });

  /** The reply, and the commands the server sent to Redis for it. */
  async function counted(send: () => Promise<Reply>): Promise<{ reply: Reply; commands: string[] }> {
    let reply!: Reply;
    const lines = await monitor.during(prefix, async () => {
      reply = await send();
    });
    return { reply, commands: lines.map(brief) };
  }

  /** Sends once so every script the request runs is loaded, then counts a second send. */
  async function countedWarm(send: () => Promise<Reply>) {
    await send();
    return counted(send);
  }

  it('a free request is 1 command: the API key is checked and the request admitted in one script', async () => {
    const { key } = await h.account('starter');
    const { reply, commands } = await countedWarm(() => h.request('/api/v1/search?q=cats', { key }));
    expect(reply.status).toBe(200);
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatch(/^FCALL /);
  });

  it('a usage poll is 2 commands: the key check and the usage read in one script, then the grants', async () => {
    const { key } = await h.account('starter');
    const { reply, commands } = await countedWarm(() => h.request('/api/v1/usage', { headers: { 'x-api-key': key } }));
    expect(reply.status).toBe(200);
    expect(reply.body.grants).toHaveLength(1);
    expect(commands).toHaveLength(2);
  });

  it('a charged transcript is 2 commands: key check + admit + credit pre-check, then the charge', async () => {
    const { key } = await h.account('starter');
    const { reply, commands } = await countedWarm(() => h.request(`/transcript/${VIDEO}?format=srt`, { key }));
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-credits-charged')).toBe('1');
    expect(commands).toHaveLength(2);
  });

  it('a comments page is 1 command, plus 1 when the page is nonempty and charged', async () => {
    const { key } = await h.account('starter');
    const nonempty = await countedWarm(() => h.request(`/api/v1/comments/${VIDEO}`, { key }));
    expect(nonempty.reply.headers.get('x-credits-charged')).toBe('1');
    expect(nonempty.commands).toHaveLength(2);
    const empty = await counted(() => h.request('/api/v1/comments/nocomm00001', { key }));
    expect(empty.reply.headers.get('x-credits-charged')).toBe('0');
    expect(empty.commands).toHaveLength(1);
  });

  it('a website session request is 1 command on the web surface', async () => {
    const { key } = await h.account('starter');
    const login = await h.request('/web/login', { body: { api_key: key } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const { reply, commands } = await countedWarm(() => h.request('/api/v1/search?q=cats', { headers: { cookie } }));
    expect(reply.status).toBe(200);
    expect(commands).toHaveLength(1);
  });

  it('an OAuth token resolves through the verifier hook to the same account, then one plain admit: 1 command', async () => {
    const { id } = await h.account('starter');
    const token = (await h.admin(`/admin/accounts/${id}/oauth-tokens`)).body.access_token as string;
    const { reply, commands } = await countedWarm(() => h.request('/api/v1/search?q=cats', { key: token }));
    expect(reply.status).toBe(200);
    expect(commands).toHaveLength(1);
    expect(commands[0]).toContain(`{${id}}`);
  });

  it('deny cache: a key denied with nothing left is answered from memory, with the same headers, until the window resets', async () => {
    const { key } = await h.account('free');
    for (let i = 0; i < 30; i++) expect((await h.request('/api/v1/search?q=a', { key })).status).toBe(200);
    const first = await counted(() => h.request('/api/v1/search?q=a', { key }));
    expect(first.reply.status).toBe(429);
    expect(first.commands).toHaveLength(1);
    const cached = await counted(() => h.request(`/transcript/${VIDEO}`, { key }));
    expect(cached.commands).toEqual([]);
    expect(cached.reply.status).toBe(429);
    expect(cached.reply.body.error).toMatchObject({ type: 'rate_limited', message: 'Rate limit exceeded' });
    for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining']) expect(cached.reply.headers.get(header)).toBe(first.reply.headers.get(header));
    expect(Number(cached.reply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A forged key of the same account still gets its 401: the cache is keyed by the whole key.
    const forged = key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa');
    expect((await h.request('/api/v1/search?q=a', { key: forged })).status).toBe(401);
    h.clock.advance(60_000);
    const after = await counted(() => h.request('/api/v1/search?q=a', { key }));
    expect(after.reply.status).toBe(200);
    expect(after.commands).toHaveLength(1);
  });

  it('an IP over its failed key checks is refused from memory: 429 with no command at all', async () => {
    const { key } = await h.account('starter');
    const wrong = key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa');
    const failed = await counted(() => h.request('/api/v1/search?q=a', { key: wrong }));
    // The key check, then the attempt counted against the IP.
    expect(failed.reply.status).toBe(401);
    expect(failed.commands).toHaveLength(2);
    for (let i = 1; i < 10; i++) expect((await h.request('/api/v1/search?q=a', { key: wrong })).status).toBe(401);
    expect((await h.request('/api/v1/search?q=a', { key: wrong })).status).toBe(429);
    const blocked = await counted(() => h.request('/api/v1/search?q=a', { key }));
    expect(blocked.reply.status).toBe(429);
    expect(blocked.commands).toEqual([]);
    h.clock.advance(60_000);
    expect((await h.request('/api/v1/search?q=a', { key })).status).toBe(200);
  });
});
