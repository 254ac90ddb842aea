/**
 * The total bound on request bodies being read (MAX_BODY_BYTES), measured: starts the service (a `dist/` folder, this
 * one by default) with a 16 MiB BODY_LIMIT, opens N connections (default 1000) that each send a 16 MiB body but for
 * its last byte, samples the service's RSS for 20 s, and prints one JSON line: the growth, and how the connections
 * were answered. `test/edge/body-budget.test.ts` asserts the same at 12 connections.
 *
 *   node dist/bench/body-bound.js [N] [dist]
 */
import { connect, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep, startServiceProcess } from './service-process.js';

const count = Number(process.argv[2] ?? 1000);
const dist = resolve(process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const MiB = 1024 * 1024;
const TOKEN = 'body-bound-token';

const svc = await startServiceProcess(dist, {
  BODY_LIMIT: String(16 * MiB),
  AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:write'] }]),
});
const { port, child } = svc;
const before = svc.rssMiB();

const pad = 16 * MiB - '{"id":1,"name":"big","pad":""}'.length;
const body = Buffer.from(`{"id":1,"name":"big","pad":"${'x'.repeat(pad)}"}`);
const head =
  `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
  `Content-Length: ${body.length}\r\n\r\n`;
const statuses = new Map<string, number>();
const sockets: Socket[] = [];
for (let i = 0; i < count; i++) {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let status: string | undefined;
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    status ??= chunk.toString('latin1', 9, 12);
  });
  socket.on('close', () => statuses.set(status ?? 'closed', (statuses.get(status ?? 'closed') ?? 0) + 1));
  socket.on('connect', () => {
    socket.write(head);
    socket.write(body.subarray(0, body.length - 1));
  });
}
let peak = before;
const started = Date.now();
while (Date.now() - started < 20_000) {
  await sleep(100); // the sampling interval
  peak = Math.max(peak, svc.rssMiB());
}
const open = sockets.filter((s) => !s.destroyed).length;
process.stdout.write(
  JSON.stringify({
    node: process.versions.node,
    connections: count,
    bodyLimit: 16 * MiB,
    rssBeforeMiB: Math.round(before),
    rssPeakMiB: Math.round(peak),
    growthMiB: Math.round(peak - before),
    closedByServer: Object.fromEntries(statuses),
    stillOpen: open,
  }) + '\n',
);
for (const s of sockets) s.destroy();
child.kill('SIGKILL');
process.exit(0);
