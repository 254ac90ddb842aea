import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { metricsServer } from '../../adapters/http/metrics-listener.js';
import { defaultServerLimits } from '../../adapters/http/server/server.js';
import { serviceMetrics } from '../../adapters/observability/metrics.js';
import { parseExposition } from '../support/prometheus-text.js';
import { rawRequest } from '../support/http.js';

/** The METRICS_PORT listener logs and counts every request it answers, as the API's listener does (CONTRACT §1, §9). */
const test = suite('edge: the metrics listener logs and counts its requests');

const started = async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const metrics = serviceMetrics();
  const server = metricsServer(metrics.exposition, {
    logger: pino({ level: 'info', base: null }, sink),
    limits: defaultServerLimits,
    metrics: metrics.http,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    requests: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request'),
    scrape: async () => parseExposition(await metrics.exposition.scrape()),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

test('a 404, a 405 and a 200 there each log one request line with their id and status, and are counted', async () => {
  const svc = await started();
  try {
    const ask = (path: string, method: string, id: string) =>
      fetch(svc.base + path, { method, headers: { 'x-request-id': id } }).then(async (r) => {
        await r.text();
        return r.status;
      });
    assert.is(await ask('/plants', 'GET', 'm-404'), 404);
    assert.is(await ask('/metrics', 'POST', 'm-405'), 405);
    assert.is(await ask('/metrics', 'GET', 'm-200'), 200);
    const byId = new Map(svc.requests().map((l) => [l['reqId'], l]));
    assert.is(byId.get('m-404')?.['status'], 404);
    assert.is(byId.get('m-405')?.['status'], 405);
    assert.is(byId.get('m-200')?.['status'], 200);
    assert.is(byId.get('m-200')?.['method'], 'GET');
    const m = await svc.scrape();
    assert.is(m.value('http_requests_total', { method: 'GET', route: 'unknown', status: '404' }), 1);
    assert.is(m.value('http_requests_total', { method: 'POST', status: '405' }), 1);
    assert.is(m.value('http_requests_total', { method: 'GET', route: '/metrics', status: '200' }), 1);
  } finally {
    await svc.close();
  }
});

test('a request its parser refuses there is counted too (route unrouted), and its line names the listener', async () => {
  const svc = await started();
  try {
    assert.is((await rawRequest(svc.port, ['FOO /metrics HTTP/1.1\r\nHost: x\r\n\r\n'])).status, 400);
    const m = await svc.scrape();
    assert.is(m.value('http_requests_total', { route: 'unrouted', status: '400' }), 1);
    const refused = svc.requests().filter((l) => l['status'] === 400);
    assert.is(refused.length, 1, JSON.stringify(svc.requests()));
    assert.is(refused[0]?.['listener'], 'metrics', 'its line says which listener refused it');
  } finally {
    await svc.close();
  }
});

test.run();
