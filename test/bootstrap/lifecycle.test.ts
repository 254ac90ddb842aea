import { connect } from 'node:net';
import { accepts } from '../../harness/servers.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { hungListener } from '../support/hung.js';
import { runNode, type Started } from '../support/process.js';
import { eventually, requestsInFlight, within } from '../support/wait.js';

const test = suite('the service process: start-up, readiness and shutdown');

const TOKEN = 'lifecycle-token';
const base = {
  PORT: '0',
  HOST: '127.0.0.1',
  AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
};
const portOf = (stdout: string): number => Number(/"port":(\d+)/.exec(stdout)?.[1]);
const messages = (stdout: string): string[] =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);

const listening = async (svc: Started): Promise<number> => {
  await svc.waitFor(/"msg":"listening"/);
  return portOf(svc.stdout());
};

test('a HOST that is not an address of this machine stops start-up with exit 1 and one line naming HOST', async () => {
  // 192.0.2.1 (TEST-NET-1) is never a local address: binding to it fails at once, with no traffic.
  const svc = runNode('bootstrap/main.js', { ...base, PORT: '0', HOST: '192.0.2.1' });
  assert.is(await svc.exited, 1);
  assert.match(
    svc.stderr(),
    /^config: HOST: cannot listen on "192\.0\.2\.1" \(EADDRNOTAVAIL: [^\n]*\); for example HOST=127\.0\.0\.1\n$/,
  );
  assert.not.match(svc.stdout(), /"msg":"listening"/);
});

test('SIGTERM during start-up, while the token store does not answer, exits 0 without ever listening', async () => {
  const redis = await hungListener();
  try {
    const svc = runNode('bootstrap/main.js', {
      ...base,
      AUTH: 'redis',
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      AUTH_TIMEOUT_MS: '30000',
    });
    await svc.waitFor(/"msg":"starting"/);
    await redis.connected(); // the service is inside its wait for Redis
    const sent = Date.now();
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    assert.ok(Date.now() - sent < 15_000, 'it did not wait for the 30 s token store bound');
    assert.equal(messages(svc.stdout()), ['starting', 'stopping during start-up', 'stopped']);
  } finally {
    await redis.close();
  }
});

test('shutdown log lines come in order, and nothing listens afterwards', async () => {
  const svc = runNode('bootstrap/main.js', base);
  const port = await listening(svc);
  assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  svc.child.kill('SIGINT');
  assert.is(await svc.exited, 0);
  const msgs = messages(svc.stdout());
  assert.equal(msgs.slice(msgs.indexOf('listening')), [
    'listening',
    'request',
    'stopping: finishing in-flight requests',
    'in-flight requests finished',
    'backends closed',
    'stopped',
  ]);
  assert.is(await accepts(port), false);
});

test('a process whose stdout reader is gone exits 0 on SIGTERM, the first failed write being at shutdown', async () => {
  // pino's default (asynchronous) destination flushed at exit with a loop that retried EPIPE forever: this hung.
  const svc = runNode('bootstrap/main.js', base);
  const port = await listening(svc);
  const gone = new Promise((r) => svc.child.stdout.once('close', r));
  svc.child.stdout.destroy();
  await gone; // our end of the pipe is closed: the process's next write fails
  svc.child.kill('SIGTERM');
  try {
    assert.is(await within(10_000, 'exit after SIGTERM', svc.exited), 0);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
  assert.is(await accepts(port), false);
});

test('a process whose stdout is a closed pipe still serves, drains on SIGTERM and exits 0', async () => {
  const svc = runNode('bootstrap/main.js', base);
  const port = await listening(svc);
  svc.child.stdout.destroy(); // the reader goes away: every log line from now on meets EPIPE
  for (let i = 0; i < 20; i++) assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  svc.child.kill('SIGTERM');
  assert.is(await svc.exited, 0);
  assert.is(svc.stderr(), '');
  assert.is(await accepts(port), false);
});

test('/readyz answers within its bound when storage accepts connections and never answers', async () => {
  const mongo = await hungListener();
  const svc = runNode('bootstrap/main.js', {
    ...base,
    STORAGE: 'mongodb',
    MONGODB_URI: `mongodb://127.0.0.1:${mongo.port}`,
    STORAGE_TIMEOUT_MS: '18000', // the longest STORAGE=mongodb takes (quota.ts, `timings`)
  });
  try {
    const port = await listening(svc);
    for (let i = 0; i < 3; i++) {
      // Answered by the readiness bound (500 ms), not by storage's own (18 s here): the request gives up at half of
      // storage's, so only the readiness bound can answer it, with room for a loaded machine.
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(30_000) });
      assert.is(res.status, 503);
      assert.equal(await res.json(), { error: 503, message: 'not ready: storage does not answer' });
    }
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
    await mongo.close();
  }
});

test('the whole shutdown is bounded by SHUTDOWN_TIMEOUT_MS, a request hung on storage and its close included', async () => {
  const mongo = await hungListener();
  const svc = runNode('bootstrap/main.js', {
    ...base,
    STORAGE: 'mongodb',
    MONGODB_URI: `mongodb://127.0.0.1:${mongo.port}`,
    STORAGE_TIMEOUT_MS: '18000',
    SHUTDOWN_TIMEOUT_MS: '1000',
  });
  try {
    const port = await listening(svc);
    const hung = fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"id": 1, "name": "Fern"}',
    }).catch((e: unknown) => e);
    await requestsInFlight(`http://127.0.0.1:${port}`); // the hung create
    const sent = Date.now();
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    assert.ok(Date.now() - sent < 10_000, `stopped in ${Date.now() - sent} ms, not at the 18 s storage bound`);
    assert.ok((await hung) instanceof Error, 'the request still running at the bound was cut');
    assert.match(svc.stdout(), /"cutRequests":1,"msg":"shutdown bound reached: cutting the requests still running"/);
    assert.match(svc.stdout(), /"msg":"stopped"/);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
    await mongo.close();
  }
});

test('a response sent while draining says Connection: close, so that no client or balancer reuses a connection about to close', async () => {
  const mongo = await hungListener();
  const svc = runNode('bootstrap/main.js', {
    ...base,
    STORAGE: 'mongodb',
    MONGODB_URI: `mongodb://127.0.0.1:${mongo.port}`,
    STORAGE_TIMEOUT_MS: '1500',
  });
  try {
    const port = await listening(svc);
    // One keep-alive connection: a request answered before the signal, then one in flight (hung on storage) across it.
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const request = `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`;
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await eventually('the whole /healthz answer', () => /\r\n\r\n\{[^]*\}$/.test(received));
    assert.match(received, /^HTTP\/1.1 200 [^]*\r\nConnection: keep-alive\r\n/i, 'before: keep-alive');
    received = '';
    socket.write(request);
    await requestsInFlight(`http://127.0.0.1:${port}`); // the hung list
    svc.child.kill('SIGTERM');
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    assert.match(received, /^HTTP\/1.1 503 /, received);
    assert.match(received, /\r\nConnection: close\r\n/i, `draining: ${received}`);
    assert.is(await svc.exited, 0);
  } finally {
    svc.child.kill('SIGKILL');
    await mongo.close();
  }
});

test('a connection that has not sent a byte (a preconnect, a TCP check) does not hold the shutdown', async () => {
  const svc = runNode('bootstrap/main.js', { ...base, SHUTDOWN_TIMEOUT_MS: '20000' });
  try {
    const port = await listening(svc);
    const silent = connect(port, '127.0.0.1');
    silent.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    await new Promise<void>((resolve) => silent.once('connect', () => resolve()));
    // Served on another connection after the silent one was accepted (both wait in the same backlog).
    assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    const sent = Date.now();
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    assert.ok(Date.now() - sent < 5_000, `stopped in ${Date.now() - sent} ms, not at the 20 s bound`);
    await within(1000, 'the silent connection closed', closed);
    assert.match(svc.stdout(), /"msg":"in-flight requests finished"/);
    assert.not.match(svc.stdout(), /shutdown bound reached/);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('a request cut by the shutdown bound while its body is still arriving is logged 499 before the exit', async () => {
  const svc = runNode('bootstrap/main.js', { ...base, SHUTDOWN_TIMEOUT_MS: '500' });
  try {
    const port = await listening(svc);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 50\r\n\r\n{"id":',
    );
    await requestsInFlight(`http://127.0.0.1:${port}`);
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
    const lines = svc
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const cut = lines.findIndex((l) => l['msg'] === 'shutdown bound reached: cutting the requests still running');
    const logged = lines.findIndex((l) => l['msg'] === 'request' && l['method'] === 'POST' && l['status'] === 499);
    const stopped = lines.findIndex((l) => l['msg'] === 'stopped');
    assert.ok(cut >= 0 && logged > cut && stopped > logged, svc.stdout());
    socket.destroy();
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test.run();
