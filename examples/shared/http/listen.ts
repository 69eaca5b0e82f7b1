/** Binds a Node request listener (an Express app, a Koa callback) and closes it cleanly. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  url: string;
  port: number;
  close(): Promise<void>;
}

export function listen(listener: http.RequestListener, port: number, host = '127.0.0.1'): Promise<Listening> {
  const server = http.createServer(listener);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address() as AddressInfo;
      resolve({
        url: `http://${host}:${address.port}`,
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
