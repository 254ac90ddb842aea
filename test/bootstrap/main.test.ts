import { connect, createServer as createNetServer } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runNode } from '../support/process.js';
import { requestsInFlight } from '../support/wait.js';

const test = suite('the service process');

const listening = /"msg":"listening"/;
const portOf = (stdout: string): number => Number(/"port":(\d+)/.exec(stdout)?.[1]);

/** Every line the process wrote on stdout, each parsed as JSON (a line that is not JSON fails the test). */
const jsonLines = (stdout: string): unknown[] =>
  stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        throw new Error(`a stdout line is not JSON: ${line}`);
      }
    });

const TOKENS = '[{"token":"t","owner":"o","subject":"s","scopes":[]}]';

test('with no token configured it refuses to start: exit 1, one line naming AUTH_TOKENS and the three ways', async () => {
  const svc = runNode('bootstrap/main.js', { PORT: '0', HOST: '127.0.0.1' });
  assert.is(await svc.exited, 1);
  const lines = svc
    .stderr()
    .split('\n')
    .filter((l) => l !== '');
  assert.is(lines.length, 1, svc.stderr());
  assert.match(lines[0] ?? '', /^config: AUTH_TOKENS: .*AUTH_TOKENS_FILE.*AUTH=redis.*AUTH=jwt/);
  jsonLines(svc.stdout());
  assert.not.match(svc.stdout(), listening);
});

test('every stdout line of a start on memory is JSON, the memory warning included', async () => {
  const svc = runNode('bootstrap/main.js', { PORT: '0', HOST: '127.0.0.1', AUTH_TOKENS: TOKENS });
  try {
    await svc.waitFor(listening);
  } finally {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  const messages = jsonLines(svc.stdout()).map((line) => (line as { msg?: string }).msg);
  assert.ok(messages.some((m) => m?.startsWith('in-memory storage: every plant is lost')));
  assert.ok(messages.includes('stopped'));
});

test('the listening line names the API reference page', async () => {
  const svc = runNode('bootstrap/main.js', { PORT: '0', HOST: '127.0.0.1', AUTH_TOKENS: TOKENS });
  try {
    await svc.waitFor(listening);
    const line = svc
      .stdout()
      .split('\n')
      .find((l) => l.includes('"msg":"listening"'));
    const docs = (JSON.parse(line ?? '{}') as { docs?: string }).docs;
    assert.is(docs, `http://127.0.0.1:${portOf(svc.stdout())}/docs`);
    assert.is((await fetch(docs ?? '')).status, 200, 'the page is there');
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('a bad variable stops start-up with exit 1 and one line naming it', async () => {
  const svc = runNode('bootstrap/main.js', { PORT: 'eighty' });
  assert.is(await svc.exited, 1);
  assert.is(svc.stderr(), 'config: PORT: must be an integer from 0 to 65535 (got "eighty"); for example PORT=3000\n');
  assert.not.match(svc.stdout(), listening);
});

test('a port already in use stops start-up with exit 1', async () => {
  const first = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: '[{"token":"t","owner":"o","subject":"s","scopes":[]}]',
  });
  try {
    await first.waitFor(listening);
    const second = runNode('bootstrap/main.js', {
      PORT: String(portOf(first.stdout())),
      HOST: '127.0.0.1',
      AUTH_TOKENS: TOKENS,
    });
    assert.is(await second.exited, 1);
    assert.match(second.stderr(), /^start-up failed: .*EADDRINUSE/);
  } finally {
    first.child.kill('SIGKILL');
    await first.exited;
  }
});

test('a port in use suggests one that is free now: neither the busy port nor the next one taken', async () => {
  const first = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: '[{"token":"t","owner":"o","subject":"s","scopes":[]}]',
  });
  const next = createNetServer();
  try {
    await first.waitFor(listening);
    const busy = portOf(first.stdout());
    const alsoBusy = await new Promise<boolean>((resolve) => {
      next.once('error', () => resolve(false));
      next.listen(busy + 1, '127.0.0.1', () => resolve(true));
    });
    const second = runNode('bootstrap/main.js', { PORT: String(busy), HOST: '127.0.0.1', AUTH_TOKENS: TOKENS });
    assert.is(await second.exited, 1);
    const suggested = /for example PORT=(\d+) \(free now\)\n$/.exec(second.stderr());
    assert.ok(suggested !== null, second.stderr());
    const port = Number(suggested[1]);
    assert.ok(port > busy && port !== 3000, `suggested ${port}, busy ${busy}`);
    if (alsoBusy) assert.ok(port > busy + 1, 'not the next port, which is taken');
    const probe = createNetServer();
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
    });
  } finally {
    next.close();
    first.child.kill('SIGKILL');
    await first.exited;
  }
});

test('SIGTERM finishes the request in flight, closes idle keep-alive connections, and exits 0', async () => {
  const token = 'drain-token';
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: JSON.stringify([{ token, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
  });
  await svc.waitFor(listening);
  const port = portOf(svc.stdout());
  // An idle keep-alive connection that must not hold the process open.
  const idle = connect(port, '127.0.0.1');
  await new Promise((r) => idle.once('connect', r));
  idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await new Promise((r) => idle.once('data', r));
  // A request in flight: headers sent, body not yet.
  const body = '{"id": 5, "name": "late"}';
  const busy = connect(port, '127.0.0.1');
  await new Promise((r) => busy.once('connect', r));
  busy.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  await requestsInFlight(`http://127.0.0.1:${port}`); // its headers are read: it is in flight
  svc.child.kill('SIGTERM');
  await svc.waitFor(/"msg":"stopping/);
  let answer = '';
  busy.on('data', (c: Buffer) => (answer += c.toString()));
  const busyClosed = new Promise((r) => busy.once('close', r));
  busy.write(body);
  await busyClosed;
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  assert.match(answer, /\{"name":"late"\}$/);
  assert.is(await svc.exited, 0);
  assert.match(svc.stdout(), /"msg":"stopped"/);
  idle.destroy();
});

test.run();
