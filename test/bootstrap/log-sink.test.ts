import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { distRoot } from '../support/process.js';
import { eventually, within } from '../support/wait.js';

/**
 * The service with its stdout on a pipe whose reader stops reading once the service listens (a blocking container log
 * driver, journald under load): the pipe and the reader's buffer fill after a few hundred lines.
 */
const startWithStuckReader = async () => {
  const child = spawn(process.execPath, [join(distRoot, 'bootstrap/main.js')], {
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      AUTH_TOKENS: '[{"token":"t","owner":"o","subject":"s","scopes":[]}]',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  let started: () => void = () => undefined;
  const listening = new Promise<void>((resolve) => (started = resolve));
  const onData = (c: Buffer) => {
    out += c.toString('utf8');
    if (/"msg":"listening"/.test(out)) started();
  };
  child.stdout.on('data', onData);
  // 'exit', not 'close': a stdout nobody reads is never read to its end. Once exited, its pipe is let go.
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      child.stdout.destroy();
      resolve(code);
    }),
  );
  await within(
    10_000,
    'listening',
    Promise.race([listening, exited.then(() => Promise.reject(new Error('exited')))]),
  ).catch((e: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`did not start (${String(e)}): ${out} ${err}`);
  });
  const port = Number(/"port":(\d+)/.exec(out)?.[1]);
  child.stdout.off('data', onData);
  child.stdout.pause();
  return {
    child,
    port,
    exited,
    /** The reader reads again: everything written from now on. */
    readAgain: () => {
      let text = '';
      child.stdout.on('data', (c: Buffer) => (text += c.toString('utf8')));
      child.stdout.resume();
      return () => text;
    },
  };
};

/** `connections` × `rounds` × 16 pipelined GET /healthz, each round read before the next; rejects after `ms`. */
const flood = (port: number, connections: number, rounds: number, ms: number): Promise<void> => {
  const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(16);
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let seen = 0;
      let round = 0;
      let tail = '';
      socket.on('error', reject);
      socket.on('connect', () => socket.write(request));
      socket.on('data', (chunk: Buffer) => {
        const text = tail + chunk.toString('latin1');
        seen += text.split('HTTP/1.1 200').length - 1;
        tail = text.slice(-11);
        if (seen < (round + 1) * 16) return;
        round += 1;
        if (round === rounds) {
          socket.destroy();
          resolve();
        } else socket.write(request);
      });
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the requests were not all answered within ${ms} ms`)), ms);
    Promise.all(Array.from({ length: connections }, one)).then(() => {
      clearTimeout(timer);
      resolve();
    }, reject);
  });
};

test('with a stdout nobody reads, 8000 requests are answered and /healthz answers at once', async () => {
  const svc = await startWithStuckReader();
  try {
    await flood(svc.port, 20, 25, 30_000);
    const res = await fetch(`http://127.0.0.1:${svc.port}/healthz`, { signal: AbortSignal.timeout(2000) });
    assert.is(res.status, 200);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('with a stdout nobody reads, SIGTERM exits 0 within a few seconds', async () => {
  const svc = await startWithStuckReader();
  try {
    // Whether or not the requests could all be answered (a service blocked on its log writes answers none of them).
    await flood(svc.port, 20, 25, 20_000).catch(() => undefined);
    svc.child.kill('SIGTERM');
    let code: number | null = null;
    await within(
      5000,
      'exit after SIGTERM',
      svc.exited.then((c) => (code = c)),
    );
    assert.is(code, 0);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test('lines dropped while stdout was not read are counted exactly, in one line once it is read again', async () => {
  const svc = await startWithStuckReader();
  try {
    await flood(svc.port, 20, 50, 30_000);
    const read = svc.readAgain();
    await eventually('a line with droppedLines once stdout is read again', () => /"droppedLines":\d+/.test(read()));
    const lines = read().split('\n');
    const line = lines.find((l) => l.includes('"droppedLines"'));
    assert.ok(line !== undefined, 'a line with droppedLines');
    const report = JSON.parse(line) as { level: number; droppedLines: number };
    assert.is(report.level, 40);
    // Every one of the 16000 request lines was either written or counted as dropped.
    const written = lines.filter((l) => l.includes('"route":"GET /healthz"')).length;
    assert.ok(report.droppedLines > 0, 'some were dropped');
    assert.is(written + report.droppedLines, 16000);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
});

test.run();
