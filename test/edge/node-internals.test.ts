import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { eventually, within } from '../support/wait.js';

/**
 * The Node internals adapters/http/server/server.ts leans on, checked on a bare node:http server (none of the
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

/**
 * Writes `requests` in one write and resolves with everything the server sent, once `enough` says it has all it
 * waits for or the server closed; rejects after `ms` (a bound on a wait, not a time under test).
 */
const exchange = (port: number, requests: string, enough: (got: string) => boolean = () => false, ms = 10_000) =>
  new Promise<string>((resolve, reject) => {
    const client = connect(port, '127.0.0.1', () => client.write(requests));
    let got = '';
    const done = () => {
      clearTimeout(timer);
      client.destroy();
      resolve(got);
    };
    const timer = setTimeout(() => {
      client.destroy();
      reject(new Error(`no answer within ${ms} ms; received: ${JSON.stringify(got)}`));
    }, ms);
    client.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (enough(got)) done();
    });
    client.on('close', done);
    client.on('error', done);
  });

/** The first response, whose body is `ok`, has come whole. */
const firstOk = (got: string) => /^HTTP\/1\.1 200 [^]*?\r\n\r\nok/.test(got);

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
      await exchange(port, get('/a'), firstOk);
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
      // The three come in one read, which the server parses in one go (in this same process) before the client can
      // read anything: once the first response is here, whatever the parser would hand on has been handed on.
      await exchange(port, get('/a') + get('/b') + get('/c'), firstOk);
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
      await eventually("the second request's bytes reach a listener", () => dropped > 0).finally(() =>
        client.destroy(),
      );
      assert.is(served, 1, 'the second request was not parsed');
      assert.is(dropped, get('/b').length, "its bytes reached the 'data' listener");
    },
  );
});

test("a response emits 'prefinish' once, before 'finish', when its last bytes are handed to the socket", async () => {
  const events: string[] = [];
  let finished: () => void = () => undefined;
  const finish = new Promise<void>((resolve) => (finished = resolve));
  await withServer(
    (_req, res) => {
      res.on('prefinish', () => events.push('prefinish'));
      res.on('finish', () => {
        events.push('finish');
        finished();
      });
      res.end('ok');
    },
    async (_server, port) => {
      await exchange(port, get('/a'), firstOk);
      await within(10_000, "the response's 'finish'", finish);
      assert.equal(events, ['prefinish', 'finish']);
    },
  );
});

test("a socket's handle counts the bytes of a write in progress the kernel has not taken (writeQueueSize), and the count falls as the client reads", async () => {
  const queued: number[] = [];
  let served: () => void = () => undefined;
  const wrote = new Promise<void>((resolve) => (served = resolve));
  let socketOf: Socket | undefined;
  await withServer(
    (req, res) => {
      socketOf = req.socket;
      res.end(Buffer.alloc(32 * 1024 * 1024)); // more than loopback's socket buffers take
      served();
    },
    async (_server, port) => {
      const client = connect(port, '127.0.0.1');
      client.pause(); // reads nothing yet
      try {
        await new Promise((resolve) => client.once('connect', resolve));
        client.write(get('/a'));
        await within(10_000, 'the response written', wrote);
        const queue = () =>
          (socketOf as Socket & { _handle?: { writeQueueSize?: number } | null })._handle?.writeQueueSize;
        // The kernel takes what its buffers hold, then stops: the count settles above 0.
        await eventually('some bytes left in the write queue', () => (queue() ?? 0) > 0);
        queued.push(queue() as number);
        client.on('data', () => undefined).resume();
        await eventually('the count falls as the client reads', () => (queue() ?? Infinity) < (queued[0] as number));
      } finally {
        client.destroy();
      }
    },
  );
});

test('a body that came with its headers is in the request buffer a turn of microtasks later; read() takes it whole, and the connection serves on without its end being read', async () => {
  const post = (body: string) =>
    `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const bodies = ['{"id":1,"name":"a"}', '{"id":2,"name":"é"}', '{"id":3,"name":"c"}'];
  let whole = 0;
  await withServer(
    (req, res) => {
      // As body.ts reads it: after the handler's first awaits, before anything else touched the request's stream.
      void Promise.resolve().then(() => {
        const length = Number(req.headers['content-length']);
        if (req.readableLength === length && req.readableFlowing === null) {
          whole++;
          const body: unknown = req.read();
          res.end(body instanceof Buffer ? body : 'not one buffer');
          return;
        }
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => res.end(Buffer.concat(chunks)));
      });
    },
    async (_server, port) => {
      const client = connect(port, '127.0.0.1');
      await new Promise((resolve) => client.once('connect', resolve));
      let got = '';
      client.on('data', (chunk: Buffer) => (got += chunk.toString('utf8')));
      try {
        // One keep-alive connection, each request in one write once the response before it has come.
        for (const [i, body] of bodies.entries()) {
          client.write(post(body));
          await eventually(`response ${i + 1}`, () => got.split('HTTP/1.1 200').length === i + 2);
        }
      } finally {
        client.destroy();
      }
      assert.equal(
        got
          .split('HTTP/1.1 200')
          .slice(1)
          .map((r) => r.slice(r.indexOf('\r\n\r\n') + 4)),
        bodies,
        'each body echoed whole, in order',
      );
      assert.is(whole, bodies.length, 'each body was in the buffer, whole, when read');
    },
  );
});

test.run();
