import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * The Node internals adapters/http/transport/server.ts leans on, checked on a bare node:http server (none of the
 * service's code), so that a Node release that moves one fails here by name rather than somewhere in the edge suites.
 * CI runs this file on every Node major it supports (20 and 24).
 */
const test = suite(`Node ${process.versions.node}: the node:http internals the transport relies on`);

interface ParserHooks {
  onIncoming?: (req: IncomingMessage, keepAlive: boolean) => number;
}
const parserOf = (socket: Socket): ParserHooks | undefined => (socket as Socket & { parser?: ParserHooks }).parser;

const listening = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};

/** Writes `requests` in one write and resolves with everything the server sent until it closed or `ms` passed. */
const exchange = (port: number, requests: string, ms = 1000): Promise<string> =>
  new Promise((resolve) => {
    const client = connect(port, '127.0.0.1', () => client.write(requests));
    let got = '';
    const done = () => {
      clearTimeout(timer);
      client.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, ms);
    client.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
    client.on('close', done);
    client.on('error', done);
  });

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

const withServer = async (
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
  run: (server: Server, port: number) => Promise<void>,
) => {
  const server = createServer(onRequest);
  try {
    await run(server, await listening(server));
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
};

test('a new connection carries its parser, with an onIncoming hook', async () => {
  await withServer(
    (_req, res) => res.end('ok'),
    async (server, port) => {
      let hook = 'no connection';
      server.on('connection', (socket: Socket) => (hook = typeof parserOf(socket)?.onIncoming));
      await exchange(port, get('/a'), 300);
      assert.is(hook, 'function', 'socket.parser.onIncoming');
    },
  );
});

test('onIncoming returning 2 stops the parser: later requests of the same read are never handed to the server', async () => {
  let served = 0;
  await withServer(
    (_req, res) => {
      served++;
      res.end('ok');
    },
    async (server, port) => {
      server.on('connection', (socket: Socket) => {
        const parser = parserOf(socket);
        const original = parser?.onIncoming;
        if (parser === undefined || original === undefined) return;
        let seen = 0;
        parser.onIncoming = (req, keepAlive) => (++seen === 1 ? original(req, keepAlive) : 2);
      });
      await exchange(port, get('/a') + get('/b') + get('/c'), 500);
      assert.is(served, 1);
    },
  );
});

test('Node ends a connection after a last response through socket.destroySoon', async () => {
  let called = 0;
  await withServer(
    (_req, res) => res.setHeader('connection', 'close').end('bye'),
    async (server, port) => {
      server.on('connection', (socket: Socket) => {
        const original = socket.destroySoon.bind(socket);
        socket.destroySoon = () => {
          called++;
          original();
        };
      });
      await exchange(port, get('/a'));
      assert.is(called, 1);
    },
  );
});

test("once a 'data' listener replaces the parser's, what arrives goes to it and is no longer parsed", async () => {
  let served = 0;
  let dropped = 0;
  await withServer(
    (req, res) => {
      served++;
      req.socket.removeAllListeners('data');
      req.socket.on('data', (chunk: Buffer) => (dropped += chunk.length));
      res.end('ok');
    },
    async (_server, port) => {
      const client = connect(port, '127.0.0.1');
      await new Promise((resolve) => client.once('connect', resolve));
      client.write(get('/a'));
      await new Promise((resolve) => client.once('data', resolve));
      client.write(get('/b'));
      const until = Date.now() + 2000;
      while (dropped === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      client.destroy();
      assert.is(served, 1, 'the second request was not parsed');
      assert.is(dropped, get('/b').length, "its bytes reached the 'data' listener");
    },
  );
});

test("a response emits 'prefinish' once, before 'finish', when its last bytes are handed to the socket", async () => {
  const events: string[] = [];
  await withServer(
    (_req, res) => {
      res.on('prefinish', () => events.push('prefinish'));
      res.on('finish', () => events.push('finish'));
      res.end('ok');
    },
    async (_server, port) => {
      await exchange(port, get('/a'), 300);
      assert.equal(events, ['prefinish', 'finish']);
    },
  );
});

test.run();
