// A TCP proxy between a client and redis-server, for faults a real network makes: replies that
// never arrive (the connection is cut after the server ran the command), and a record of what
// the client actually sent (to tell a client's resend from a caller's retry).
import net from 'node:net';

export interface RedisProxy {
  port: number;
  url: string;
  /** Every chunk clients sent upstream, in order, as text. */
  readonly sent: string[];
  /**
   * The next time a client sends a chunk containing `marker`, it is forwarded, and the
   * connection is cut as soon as the server's reply arrives (the reply is not passed on).
   * Resolves when that happened.
   */
  dropReplyTo(marker: string): Promise<void>;
  /** Cuts every open connection at once. */
  cutAll(): void;
  close(): Promise<void>;
}

export interface RedisProxyOptions {
  /**
   * Holds every reply this long before passing it on (in order), so that many commands are
   * in flight, run but unanswered, when a connection is cut.
   */
  replyDelayMs?: number;
}

export async function startRedisProxy(upstreamPort: number, options: RedisProxyOptions = {}): Promise<RedisProxy> {
  const delay = options.replyDelayMs ?? 0;
  const sent: string[] = [];
  const open = new Set<net.Socket>();
  let pending: { marker: string; done: () => void } | undefined;

  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: upstreamPort });
    open.add(client);
    open.add(upstream);
    let dropping: (() => void) | undefined;
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      const text = chunk.toString('latin1');
      sent.push(text);
      if (pending && text.includes(pending.marker)) {
        dropping = pending.done;
        pending = undefined;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (dropping) {
        // The server has run the command and answered: the client never hears of it.
        const done = dropping;
        dropping = undefined;
        cut();
        done();
        return;
      }
      if (delay > 0) setTimeout(() => client.destroyed || client.write(chunk), delay);
      else client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', cut);
      socket.on('close', () => {
        open.delete(socket);
        cut();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;

  return {
    port: address.port,
    url: `redis://127.0.0.1:${address.port}`,
    sent,
    dropReplyTo(marker) {
      return new Promise((resolve) => {
        pending = { marker, done: resolve };
      });
    },
    cutAll() {
      for (const socket of open) socket.destroy();
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
