import { createServer, type Server, type Socket } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../../harness/servers.js';
import { runNode, type Started } from '../support/process.js';
import { eventually } from '../support/wait.js';

/**
 * A collector that is away or hangs costs spans, never requests: the service process exports to a TCP listener that
 * accepts and never answers (or to a port nobody listens on), and every request is still answered while no export has
 * ever completed; the spans beyond the queue are dropped and counted in /metrics; SIGTERM still exits 0.
 */
const TOKEN = 'tracing-collector-token';
const QUEUE = 8;

const serviceEnv = (endpoint: string): Record<string, string> => ({
  PORT: '0',
  HOST: '127.0.0.1',
  AUTH_TOKENS: JSON.stringify([
    { token: TOKEN, owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] },
  ]),
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_BSP_MAX_QUEUE_SIZE: String(QUEUE),
  // Read by the SDK: a batch is sent 10 ms after its first span (so the queue meets the collector at once).
  OTEL_BSP_SCHEDULE_DELAY: '10',
  SHUTDOWN_TIMEOUT_MS: '2000',
});

const serve = async (env: Record<string, string>): Promise<{ base: string; svc: Started }> => {
  const svc = runNode('bootstrap/main.js', env);
  await svc.waitFor(/"msg":"listening"/);
  return { base: `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`, svc };
};

const dropped = async (base: string, reason: string): Promise<number> => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^plantstore_trace_spans_dropped_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text);
  return Number(m?.[1] ?? -1);
};

/** 40 creates, one after another: each is answered 200. */
const creates = async (base: string) => {
  for (let id = 1; id <= 40; id += 1) {
    const response = await fetch(`${base}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: 'Fern' }),
    });
    assert.is(response.status, 200);
  }
};

test('a collector that never answers: every request is answered, the spans beyond the queue are dropped and counted', async () => {
  const sockets = new Set<Socket>();
  let exportsStarted = 0;
  // Reads what the exporter sends and never writes a byte back.
  const collector: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => (exportsStarted += 1));
    socket.on('error', () => undefined);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => collector.listen(port, '127.0.0.1', resolve));
  const { base, svc } = await serve(serviceEnv(`http://127.0.0.1:${port}`));
  try {
    await creates(base);
    await eventually('an export sent to the collector (never answered)', () => exportsStarted > 0);
    assert.ok((await dropped(base, 'queue_full')) > 0, 'spans beyond the queue were dropped and counted');
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0, svc.stderr());
    for (const socket of sockets) socket.destroy();
    collector.close();
  }
  assert.match(svc.stdout(), /"collectorFailing":false,"msg":"queued spans not exported"/);
});

test('a collector nobody listens for: every request is answered, the failed exports are counted', async () => {
  const port = await freePort();
  const { base, svc } = await serve(serviceEnv(`http://127.0.0.1:${port}`));
  try {
    await creates(base);
    const failed = await eventually(
      'failed exports counted',
      async () => {
        const count = await dropped(base, 'export_failed');
        return count > 0 && count;
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );
    await creates(base);
    await eventually('more failed exports', async () => (await dropped(base, 'export_failed')) > failed, {
      timeoutMs: 30_000,
      everyMs: 100,
    });
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0, svc.stderr());
  }
  const lines = svc
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"backend":"trace collector"'));
  assert.is(lines.length, 1, 'the outage is one line, however many exports failed');
  assert.match(lines[0] ?? '', /"level":40,.*"reason":"[^"]+".*"msg":"trace collector unavailable: spans are dropped"/);
  // The stop does not wait for an export that cannot happen.
  assert.match(svc.stdout(), /"collectorFailing":true,"msg":"queued spans not exported"/);
});

test('OTEL_SDK_DISABLED=true turns tracing off whatever endpoint is set: no trace ids, no span counters', async () => {
  const port = await freePort();
  const { base, svc } = await serve({ ...serviceEnv(`http://127.0.0.1:${port}`), OTEL_SDK_DISABLED: 'TRUE' });
  try {
    const response = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'untraced' } });
    assert.is(response.status, 200);
    assert.is(await dropped(base, 'queue_full'), -1);
    assert.match(svc.stdout(), /"tracing":"off".*"msg":"listening"/);
    const line = svc
      .stdout()
      .split('\n')
      .find((l) => l.includes('"reqId":"untraced"'));
    assert.ok(line !== undefined && !line.includes('trace_id'));
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0, svc.stderr());
  }
});

test.run();
