/**
 * Loaded into the service by bench/unsent-bound.ts (`node --expose-gc --import`): every 100 ms it appends one JSON
 * line to the file named by UNSENT_SAMPLES with `process.memoryUsage()`, the bytes the unsent bound says it holds,
 * and what the open sockets' streams hold (`writableLength`); every second it first runs a full GC, so that those
 * lines (`gc: true`) tell live bytes from garbage not yet collected. It finds the sockets on Node's documented
 * `http.server.request.start` diagnostics channel.
 */
import { appendFileSync } from 'node:fs';
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { edgeOf } from '../adapters/http/server/exchange.js';

const file = process.env['UNSENT_SAMPLES'] ?? '';
const sockets = new Set<Socket>();
let lastRequest: IncomingMessage | undefined;
subscribe('http.server.request.start', (message) => {
  const { socket, request } = message as { socket: Socket; request: IncomingMessage };
  lastRequest = request;
  if (sockets.has(socket)) return;
  sockets.add(socket);
  socket.once('close', () => sockets.delete(socket));
});
const collect = (globalThis as { gc?: () => void }).gc;
let tick = 0;
setInterval(() => {
  tick += 1;
  const gc = tick % 10 === 0 && collect !== undefined;
  if (gc) collect();
  let streams = 0;
  const unsent = lastRequest === undefined ? 0 : (edgeOf(lastRequest)?.unsent.held() ?? 0);
  for (const socket of sockets) streams += socket.writableLength;
  const at = Math.round(performance.now());
  appendFileSync(
    file,
    JSON.stringify({ at, gc, ...process.memoryUsage(), unsent, streams, sockets: sockets.size }) + '\n',
  );
}, 100).unref();
