import { accepts } from '../../harness/servers.js';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as assert from 'uvu/assert';
import { distRoot } from '../support/process.js';
import { suiteWith, type Setup } from '../support/suites.js';
import { eventually, requestsInFlight } from '../support/wait.js';

/**
 * `npm start` itself, as a user runs it: npm, then (through `exec`, no shell left in between) the service. A signal
 * sent to the npm process must reach the service, which drains and exits 0, so that npm exits 0 and nothing is
 * left listening or running.
 */
const root = join(distRoot, '..');
const TOKEN = 'npm-start-token';

const builder = (await import(pathToFileURL(join(root, 'scripts', 'build.mjs')).href)) as { isStale: () => boolean };
const setup: Setup<{ root: string }> = builder.isStale()
  ? (() => {
      const reason = 'dist/ is older than the sources, and npm start would compile first (run npm run build)';
      if (process.env['CI'] === 'true') throw new Error(`CI=true and ${reason}`);
      return { skip: reason };
    })()
  : async () => ({ root });

const { test, run } = suiteWith('npm start', setup);

interface NpmStart {
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
  readonly kill: (signal: NodeJS.Signals) => void;
  readonly listening: Promise<{ port: number; pid: number }>;
}

const npmStart = (): NpmStart => {
  const child = spawn('npm', ['start'], {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/tmp',
      PORT: '0',
      HOST: '127.0.0.1',
      AUTH_TOKENS: JSON.stringify([
        { token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] },
      ]),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const listening = new Promise<{ port: number; pid: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not listen in 30 s: ${out} ${err}`)), 30_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = /\{[^\n]*"msg":"listening"[^\n]*\}/.exec(out);
      if (line !== null) {
        clearTimeout(timer);
        const { port, pid } = JSON.parse(line[0]) as { port: number; pid: number };
        resolve({ port, pid });
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`npm exited before listening: ${out} ${err}`));
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { stdout: () => out, stderr: () => err, exited, kill: (s) => child.kill(s), listening };
};

const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('SIGTERM to the npm process drains the request in flight, then npm exits 0 and nothing is left', async () => {
  const npm = npmStart();
  const { port, pid } = await npm.listening;
  assert.not.match(npm.stderr(), /compiling/, 'a built checkout starts without compiling');
  const body = '{"id": 1, "name": "late"}';
  const busy = connect(port, '127.0.0.1');
  await new Promise((r) => busy.once('connect', r));
  busy.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
  );
  await requestsInFlight(`http://127.0.0.1:${port}`); // its headers are read: it is in flight
  npm.kill('SIGTERM');
  let answer = '';
  busy.on('data', (c: Buffer) => (answer += c.toString()));
  const closed = new Promise((r) => busy.once('close', r));
  await eventually('the service logs that it is stopping', () => /"msg":"stopping/.test(npm.stdout()));
  busy.write(body);
  await closed;
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  assert.is(await npm.exited, 0);
  assert.match(npm.stdout(), /"msg":"stopped"/);
  assert.is(await accepts(port), false, 'nothing listens on the port');
  assert.is(running(pid), false, 'the service process is gone');
});

test('SIGINT to the npm process (Ctrl-C) stops the service the same way', async () => {
  const npm = npmStart();
  const { port, pid } = await npm.listening;
  assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  npm.kill('SIGINT');
  assert.is(await npm.exited, 0);
  assert.is(await accepts(port), false);
  assert.is(running(pid), false);
});

test('with no token configured, the token made for the run reaches stderr, works, and stdout stays JSON lines', async () => {
  // What `npm start` runs (package.json: exec node scripts/launch.mjs ...), without npm's own banner lines.
  const child = spawn(process.execPath, ['scripts/launch.mjs', 'dist/bootstrap/main.js'], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '', PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise((resolve) => child.once('close', resolve));
  try {
    await eventually('the service listens', () => /"msg":"listening"/.test(out), { timeoutMs: 30_000 });
    const token = /generated a token[^\n]*\n([A-Za-z0-9_-]{43})\n/.exec(err)?.[1] ?? '';
    assert.match(err, /In-memory storage: every plant is lost/);
    const { port } = JSON.parse(/\{[^\n]*"msg":"listening"[^\n]*\}/.exec(out)?.[0] ?? '{}') as { port: number };
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${port}`;
    assert.is((await fetch(`${base}/plants`, { method: 'POST', headers, body: '{"id":1,"name":"Fern"}' })).status, 200);
    assert.is(await (await fetch(`${base}/plants`, { headers })).text(), '[{"name":"Fern"}]');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  const lines = out.split('\n').filter((l) => l !== '');
  for (const line of lines) assert.not.throws(() => JSON.parse(line) as unknown, `not JSON: ${line}`);
  assert.ok(lines.length > 3);
  assert.is(out.includes(/\n([A-Za-z0-9_-]{43})\n/.exec(err)?.[1] ?? 'none'), false, 'the token is not in the log');
});

run();
