import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { eventually } from '../support/wait.js';

/**
 * The node:http behaviour adapters/http/server/body.ts relies on beyond its documentation, checked on a bare node:http
 * server (none of the service's code), so that a Node release that changes it fails here by name rather than
 * somewhere in the edge suites. CI runs this file on every Node major it supports (24 and 26).
 */
const test = suite(`Node ${process.versions.node}: the node:http behaviour the transport relies on`);

const listening = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};

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
