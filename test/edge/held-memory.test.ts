import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rssOf, runNode } from '../support/process.js';

/**
 * What a client makes the process hold is bounded per connection, as the process's RSS (CONTRACT §12,
 * docs/operations.md#what-a-client-can-make-the-process-hold), whatever the shape of its bytes: bodies of 1-byte
 * chunks, requests of many tiny header fields, pipelined requests behind a response it never reads. Each test opens
 * its connections against a fresh service process and samples the process's RSS while they hold.
 */
const PER_CONNECTION = 256 * 1024;
const MiB = 1024 * 1024;
const TOKEN = 'held-memory-token';
const ASSET = 'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n';

/** User and system CPU time the process has spent, in clock ticks (/proc/PID/stat). */
const cpuTicksOf = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [utime = 0, stime = 0] = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 13)
    .map(Number);
  return utime + stime;
};

/** Opens `count` connections that each write `payload` and read nothing; resolves with the RSS growth seen. */
const growthUnder = async (count: number, payload: string): Promise<number> => {
  const proc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:write'] }]),
  });
  const sockets: Socket[] = [];
  try {
    const port = Number((await proc.waitFor(/"port":(\d+)/))[1]);
    const pid = proc.child.pid as number;
    // The first requests load what serving them needs: the figure is what the connections add.
    await (await fetch(`http://127.0.0.1:${port}/docs/swagger-ui-bundle.js`)).arrayBuffer();
    await (await fetch(`http://127.0.0.1:${port}/openapi.json`)).arrayBuffer();
    const before = rssOf(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10).unref();
    for (let i = 0; i < count; i++) {
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.pause();
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(payload);
    }
    // Until the service has dealt with what they sent: its CPU time stops growing for 300 ms (at most 30 s).
    for (let last = -1, at = 0; at < 100; at++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const spent = cpuTicksOf(pid);
      if (spent === last) break;
      last = spent;
    }
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(pid));
    return peak - before;
  } finally {
    for (const socket of sockets) socket.destroy();
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
};

const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;

test('150 connections holding a 16 KB body of 1-byte chunks before its last chunk grow RSS less than 256 KiB each', async () => {
  const head = `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const grew = await growthUnder(150, head + '1\r\nx\r\n'.repeat(16_000));
  assert.ok(grew < 150 * PER_CONNECTION, `RSS grew ${mib(grew)}`);
});

test('150 connections without a token pipelining a chunked body of 1-byte chunks behind an unread response grow RSS less than 256 KiB each', async () => {
  const held = 'GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' + '1\r\nx\r\n'.repeat(16_000);
  const grew = await growthUnder(150, ASSET + held);
  assert.ok(grew < 150 * PER_CONNECTION, `RSS grew ${mib(grew)}`);
});

test('150 connections pipelining requests of 2,476 tiny header fields behind an unread response grow RSS less than 256 KiB each', async () => {
  let fields = '';
  for (let i = 0; fields.length < 16_000 - 40; i++) fields += `${i.toString(36)}:1\r\n`;
  const grew = await growthUnder(150, ASSET + `GET /healthz HTTP/1.1\r\nHost: x\r\n${fields}\r\n`.repeat(10));
  assert.ok(grew < 150 * PER_CONNECTION, `RSS grew ${mib(grew)}`);
});

test('100 connections that each pipeline 1,600 requests in one write and never read grow RSS less than 200 MiB', async () => {
  const grew = await growthUnder(100, 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(1600));
  assert.ok(grew < 200 * MiB, `RSS grew ${mib(grew)}`);
});

test.run();
