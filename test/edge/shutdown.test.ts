import { Agent, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHttpServer, defaultServerLimits } from '../../adapters/http/server/server.js';
import { eventually } from '../support/wait.js';

/**
 * A rolling deploy loses nothing (CONTRACT §11): a shutdown while clients keep sending, on keep-alive connections and
 * on new ones, answers every request on every connection the process accepted. Connections still in the kernel's
 * accept queue when the port closes are reset by the kernel, whatever the server: those the process never accepted, so
 * never received, and the client sees the same reset as for one it accepted and dropped. So the server notes the
 * client port of each connection it accepts, and a reset counts as a lost request only on one of those.
 */
const KEEP_ALIVE = 4;
const NEW_CONNECTIONS = 4;

/** Sends GET requests one after another until the server refuses or resets the connection; `lost` gets the resets. */
const client = async (port: number, agent: Agent | false, accepted: Set<number>, lost: string[]): Promise<number> => {
  let answered = 0;
  for (;;) {
    const again = await new Promise<boolean>((resolve) => {
      let local: number | undefined;
      const req = request({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 && (answered += 1) > 0));
      });
      req.on('socket', (socket: Socket) => {
        if (socket.localPort !== undefined) local = socket.localPort;
        else socket.once('connect', () => (local = socket.localPort));
      });
      req.on('error', (e: Error & { code?: string }) => {
        // A keep-alive connection the server closed while idle, just as the client reused it: the race every HTTP
        // client retries on (Node's `reusedSocket`); the server never received the request.
        if (e.code === 'ECONNRESET' && req.reusedSocket) return resolve(true);
        if (e.code !== 'ECONNREFUSED' && local !== undefined && accepted.has(local)) {
          lost.push(`${e.code ?? e.message} on an accepted ${agent === false ? 'new' : 'keep-alive'} connection`);
        }
        resolve(false);
      });
      req.end();
    });
    if (!again) return answered;
  }
};

test('a shutdown under steady keep-alive and new-connection traffic answers every request on every accepted connection', async () => {
  const server = createHttpServer((_req, res) => res.end('ok'), {
    logger: pino({ level: 'silent' }),
    limits: defaultServerLimits,
  });
  const accepted = new Set<number>();
  server.on('connection', (socket: Socket) => accepted.add(socket.remotePort as number));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const lost: string[] = [];
  const clients = [
    ...Array.from({ length: KEEP_ALIVE }, () =>
      client(port, new Agent({ keepAlive: true, maxSockets: 1 }), accepted, lost),
    ),
    ...Array.from({ length: NEW_CONNECTIONS }, () => client(port, false, accepted, lost)),
  ];
  await eventually('the traffic is flowing', () => accepted.size >= 100, { timeoutMs: 60_000 });
  await server.drain();
  const answered = (await Promise.all(clients)).reduce((a, b) => a + b, 0);
  assert.equal(lost, [], `${lost.length} lost (${answered} answered on ${accepted.size} connections)`);
});

test.run();
