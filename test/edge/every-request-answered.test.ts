import { request, Agent } from 'node:http';
import { connect } from 'node:net';
import * as assert from 'uvu/assert';
import { runNode, type Started } from '../support/process.js';
import { suiteWith } from '../support/suites.js';
import { eventually, requestsInFlight } from '../support/wait.js';
import { parseResponses } from './wire.js';

/**
 * Every request the service has received is answered, and logged (CONTRACT §12): a 413 sent while a keep-alive client
 * still streams its body, and the pipelined requests a client has sent when SIGTERM comes. The service runs as its own
 * process, as in production: in the test's process, client and server would share one event loop and hide the race.
 */
const TOKEN = 'every-request-token';
const start = (): Started =>
  runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
  });
const portOf = async (proc: Started): Promise<number> => Number((await proc.waitFor(/"port":(\d+)/))[1]);
/** The service's request lines with `status`, leaving out scrapes of /metrics. */
const statusLines = (proc: Started, status: number): number =>
  proc
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"msg":"request"') && l.includes(`"status":${status}`) && !l.includes('/metrics')).length;

const { test, subject, run } = suiteWith('edge: every request received is answered', async () => {
  const proc = start();
  const port = await portOf(proc);
  return {
    proc,
    port,
    teardown: async () => {
      proc.child.kill('SIGKILL');
      await proc.exited;
    },
  };
});

/** A POST on `agent` whose body is written by `send`; resolves with the status read, or the error's code. */
const post = (port: number, agent: Agent, send: (req: ReturnType<typeof request>) => void): Promise<string> =>
  new Promise((resolve) => {
    const req = request(
      {
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/plants',
        agent,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.statusCode)));
      },
    );
    req.on('error', (e: Error & { code?: string }) => resolve(e.code ?? e.message));
    send(req);
  });

test('40 keep-alive clients streaming 200 KiB in two writes each read their 413, and each is logged', async (ctx) => {
  const { port, proc } = subject(ctx);
  const agent = new Agent({ keepAlive: true });
  const before = statusLines(proc, 413);
  const answers: string[] = [];
  try {
    for (let i = 0; i < 40; i++) {
      answers.push(
        await post(port, agent, (req) => {
          req.write(Buffer.alloc(200 * 1024, 0x20));
          req.end();
        }),
      );
    }
  } finally {
    agent.destroy();
  }
  assert.equal(answers, Array<string>(40).fill('413'));
  await eventually('40 refusals logged', () => statusLines(proc, 413) - before >= 40 || undefined);
  assert.is(statusLines(proc, 413) - before, 40);
});

test('10 keep-alive clients streaming 1 MiB with backpressure each read their 413', async (ctx) => {
  const { port } = subject(ctx);
  const agent = new Agent({ keepAlive: true });
  const answers: string[] = [];
  const piece = Buffer.alloc(16 * 1024, 0x20);
  try {
    for (let i = 0; i < 10; i++) {
      answers.push(
        await post(port, agent, (req) => {
          let left = 64;
          const pump = (): void => {
            while (left > 0) {
              left -= 1;
              if (left === 0) return void req.end(piece);
              if (!req.write(piece)) return void req.once('drain', pump);
            }
          };
          req.on('response', () => (left = 0));
          pump();
        }),
      );
    }
  } finally {
    agent.destroy();
  }
  assert.equal(answers, Array<string>(10).fill('413'));
});

test('SIGTERM with 9 pipelined requests received on a connection that reads nothing: all 9 answered, exit 0', async () => {
  const proc = start();
  const port = await portOf(proc);
  const socket = connect(port, '127.0.0.1');
  try {
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    const asset = 'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n';
    const spec = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(asset.repeat(6) + spec.repeat(3));
    // One write, so one read: once one of them is in flight, all 9 have been received (the kernel takes the first
    // responses whole, so some may already be answered).
    await requestsInFlight(`http://127.0.0.1:${port}`, 1);
    proc.child.kill('SIGTERM');
    await proc.waitFor(/"msg":"stopping: finishing in-flight requests"/);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    await new Promise((resolve) => socket.once('close', resolve));
    const responses = parseResponses(Buffer.concat(chunks));
    assert.equal(
      responses.map((r) => r.status),
      Array<number>(9).fill(200),
    );
    assert.is(responses.at(-1)?.headers['connection'], 'close');
    assert.is(await proc.exited, 0);
    assert.is(statusLines(proc, 200), 9);
  } finally {
    socket.destroy();
    proc.child.kill('SIGKILL');
  }
});

run();
