import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A JWKS endpoint on a free loopback port whose answers the test controls: the key set, or an outage of one kind
 * (a 5xx, an HTML error page, JSON that is not a key set, a hang past the client's timeout, a closed connection, a
 * redirect).
 */
export type JwksAnswer = 'keys' | 'status-500' | 'html' | 'not-a-key-set' | 'hang' | 'close' | 'redirect';

export interface JwksServer {
  readonly url: string;
  /** What every request is answered with from now on. */
  readonly answer: (answer: JwksAnswer) => void;
  /** The key set served while answering 'keys'. */
  readonly setKeys: (keys: readonly object[]) => void;
  /** The key set served now. */
  readonly keys: () => readonly object[];
  /** Requests received so far. */
  readonly requests: () => number;
  readonly close: () => Promise<void>;
}

export const startJwksServer = async (keys: readonly object[]): Promise<JwksServer> => {
  let answer: JwksAnswer = 'keys';
  let current = keys;
  let count = 0;
  const hanging = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((_req, res) => {
    count++;
    switch (answer) {
      case 'keys':
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: current }));
        return;
      case 'status-500':
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal"}');
        return;
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Service Unavailable</body></html>');
        return;
      case 'not-a-key-set':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": "none today"}');
        return;
      case 'hang':
        hanging.add(res);
        return;
      case 'close':
        res.socket?.destroy();
        return;
      case 'redirect':
        // jose does not follow redirects for a key set (nor does the service's readiness fetch).
        res.writeHead(302, { location: '/moved/jwks.json' }).end();
        return;
    }
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    answer: (a) => {
      answer = a;
    },
    setKeys: (k) => {
      current = k;
    },
    keys: () => current,
    requests: () => count,
    close: async () => {
      for (const s of sockets) s.destroy();
      hanging.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
