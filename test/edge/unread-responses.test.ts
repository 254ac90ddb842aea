import { connect, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runNode } from '../support/process.js';
import { sleep } from '../support/wait.js';

const CONNECTIONS = Number(process.env['UNREAD_CONNECTIONS'] ?? 240);

test(`${CONNECTIONS} clients that pipeline 16 pages of the largest size and never read do not exhaust a 128 MiB heap, are closed at MAX_UNSENT_BYTES, and /healthz answers meanwhile`, async () => {
  const proc = runNode('bootstrap/main.js', {
    NODE_OPTIONS: '--max-old-space-size=128',
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: '[{"token":"t","owner":"o","subject":"s","scopes":["plants:read","plants:write"]}]',
  });
  const sockets: Socket[] = [];
  try {
    await proc.waitFor(/"msg":"listening"/);
    const port = Number(/"port":(\d+)/.exec(proc.stdout())?.[1]);
    const base = `http://127.0.0.1:${port}`;
    // 1000 plants of the largest size: 200 and 100 four-byte characters, so a page of 1000 is about 1.2 MB.
    const name = '🌿'.repeat(200);
    const tag = '🌿'.repeat(100);
    const headers = { authorization: 'Bearer t', 'content-type': 'application/json' };
    for (let id = 1; id <= 1000; id++) {
      const res = await fetch(`${base}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name, tag }) });
      assert.is(res.status, 200);
      await res.text();
    }
    const page = await (await fetch(`${base}/plants?limit=1000`, { headers })).text();
    assert.ok(Buffer.byteLength(page) > 1_000_000, `a page is ${Buffer.byteLength(page)} bytes`);

    const get = 'GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n';
    for (let i = 0; i < CONNECTIONS; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.pause(); // never reads its responses
      socket.on('error', () => undefined);
      socket.on('connect', () => socket.write(get.repeat(16)));
      sockets.push(socket);
    }
    const closedForUnsent = () =>
      proc
        .stdout()
        .split('\n')
        .filter((l) => l.includes('"code":"UNSENT_LIMIT"'))
        .reduce((sum, l) => sum + Number(/"closed":(\d+)/.exec(l)?.[1] ?? 0), 0);
    // Until the unsent-bytes bound has closed connections that do not read (however long the machine takes to build
    // the pages that fill it), and for at least 20 probes: /healthz on a new connection, paced as a readiness check
    // would come, each answered in turn. The deadline only keeps a broken bound from hanging the run.
    const deadline = performance.now() + 180_000;
    for (let probe = 0; probe < 20 || closedForUnsent() === 0; probe++) {
      assert.ok(performance.now() < deadline, `no UNSENT_LIMIT close after ${probe} probes`);
      const res = await fetch(`${base}/healthz`, {
        headers: { connection: 'close' },
        signal: AbortSignal.timeout(60_000),
      }).catch((e: unknown) => {
        throw new Error(`/healthz failed (${String(e)}); stderr: ${proc.stderr().slice(0, 300)}`);
      });
      await res.text();
      assert.is(res.status, 200);
      await sleep(250);
    }
    // The pages stayed within the 128 MiB heap: the process would have ended out of memory otherwise.
    assert.is(proc.child.exitCode, null, `the server is still running; stderr: ${proc.stderr().slice(0, 300)}`);
  } finally {
    for (const s of sockets) s.destroy();
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
});

test.run();
