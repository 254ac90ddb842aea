import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { promtoolBinary } from '../../harness/servers.js';
import { rawRequest } from '../support/http.js';
import { distRoot, runNode, type Started } from '../support/process.js';
import { parseExposition } from '../support/prometheus-text.js';
import { suiteWith } from '../support/suites.js';

const test = suite('GET /metrics (the real process)');

const TOKEN = 'metrics-test-token';
const env = {
  PORT: '0',
  HOST: '127.0.0.1',
  AUTH_TOKENS: JSON.stringify([
    { token: TOKEN, owner: 'metrics', subject: 's', scopes: ['plants:read', 'plants:write'] },
  ]),
};
const listening = /"msg":"listening"/;

const start = async (extra: Record<string, string> = {}) => {
  const svc = runNode('bootstrap/main.js', { ...env, ...extra });
  const [line] = await svc.waitFor(/\{[^\n]*"msg":"listening"[^\n]*\}/);
  const fields = JSON.parse(line) as { port: number; metricsPort: number };
  return { svc, base: `http://127.0.0.1:${fields.port}`, metricsBase: `http://127.0.0.1:${fields.metricsPort}` };
};

const stop = async (svc: Started) => {
  svc.child.kill('SIGTERM');
  await svc.exited;
};

test('a scrape parses as Prometheus text with requests by method, route template and status', async () => {
  const { svc, base } = await start();
  try {
    const auth = { authorization: `Bearer ${TOKEN}` };
    assert.is((await fetch(`${base}/plants`, { headers: auth })).status, 200);
    assert.is((await fetch(`${base}/plants`)).status, 401);
    assert.is((await fetch(`${base}/plants/987654321`, { method: 'DELETE', headers: auth })).status, 404);
    assert.is((await fetch(`${base}/no/such/path`)).status, 404);
    const res = await fetch(`${base}/metrics`);
    assert.is(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const m = parseExposition(await res.text());
    assert.is(m.types.get('http_requests_total'), 'counter');
    assert.is(m.value('http_requests_total', { method: 'GET', route: '/plants', status: '200' }), 1);
    assert.is(m.value('http_requests_total', { method: 'GET', route: '/plants', status: '401' }), 1);
    assert.is(m.value('http_requests_total', { method: 'DELETE', route: '/plants/{id}', status: '404' }), 1);
    assert.is(m.value('http_requests_total', { method: 'GET', route: 'unknown', status: '404' }), 1);
    assert.ok(
      m.samples.every((s) => !Object.values(s.labels).some((v) => v.includes('987654321') || v.includes('/no/'))),
      'no raw path or id in any label',
    );
    assert.is(m.types.get('http_request_duration_seconds'), 'histogram');
    const count = m.value('http_request_duration_seconds_count', { method: 'GET', route: '/plants', status: '200' });
    assert.is(count, 1);
    assert.is(m.value('http_request_duration_seconds_bucket', { route: '/plants', status: '200', le: '+Inf' }), 1);
    assert.is(m.value('http_requests_in_flight'), 0, 'the scrape itself is not counted');
  } finally {
    await stop(svc);
  }
});

test('backend availability and call durations, rate-limit refusals, process and event-loop metrics', async () => {
  const { svc, base } = await start({ RATE_LIMIT_MAX: '1' });
  try {
    const auth = { authorization: `Bearer ${TOKEN}` };
    assert.is((await fetch(`${base}/readyz`)).status, 200);
    assert.is((await fetch(`${base}/plants`, { headers: auth })).status, 200);
    assert.is((await fetch(`${base}/plants`, { headers: auth })).status, 429);
    const m = parseExposition(await (await fetch(`${base}/metrics`)).text());
    assert.is(m.value('plantstore_backend_up', { backend: 'storage' }), 1);
    assert.is(m.value('plantstore_backend_up', { backend: 'token_store' }), 1);
    assert.is(m.value('plantstore_backend_up', { backend: 'rate_limiter' }), 1);
    const calls = { backend: 'storage', operation: 'page', outcome: 'ok' };
    assert.is(m.value('plantstore_backend_call_duration_seconds_count', calls), 1);
    assert.is(
      m.value('plantstore_backend_call_duration_seconds_count', { backend: 'token_store', operation: 'verify' }),
      2,
    );
    assert.is(m.value('plantstore_rate_limit_rejections_total'), 1);
    assert.is(m.value('http_requests_total', { route: '/plants', status: '429' }), 1);
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      assert.ok(m.find(name).length === 1, `${name} is exposed`);
    }
  } finally {
    await stop(svc);
  }
});

test('with METRICS_PORT, /metrics is served on that listener only', async () => {
  const { svc, base, metricsBase } = await start({ METRICS_PORT: '0' });
  try {
    assert.is.not(metricsBase, base);
    const here = await fetch(`${base}/metrics`);
    assert.is(here.status, 404);
    assert.equal(await here.json(), {
      error: 404,
      message: 'no such resource; the API reference is at /docs (and /openapi.json)',
    });
    const there = await fetch(`${metricsBase}/metrics`);
    assert.is(there.status, 200);
    assert.ok(
      parseExposition(await there.text()).find('http_requests_total', { route: 'unknown', status: '404' }).length === 1,
    );
    assert.is((await fetch(`${metricsBase}/plants`)).status, 404);
    assert.is((await fetch(`${metricsBase}/metrics`, { method: 'POST' })).status, 405);
  } finally {
    await stop(svc);
  }
  assert.is(await svc.exited, 0);
});

test('a request the parser refuses (an unknown method) is counted, on route unrouted', async () => {
  const { svc, base } = await start();
  try {
    const refused = await rawRequest(Number(new URL(base).port), ['FOO /plants HTTP/1.1\r\nHost: x\r\n\r\n']);
    assert.is(refused.status, 400);
    const m = parseExposition(await (await fetch(`${base}/metrics`)).text());
    assert.is(m.value('http_requests_total', { method: 'unknown', route: 'unrouted', status: '400' }), 1);
  } finally {
    await stop(svc);
  }
});

test("plantstore_build_info carries the service's version from package.json", async () => {
  const { svc, base } = await start();
  try {
    const { version } = JSON.parse(readFileSync(join(distRoot, '..', 'package.json'), 'utf8')) as { version: string };
    const m = parseExposition(await (await fetch(`${base}/metrics`)).text());
    assert.is(m.types.get('plantstore_build_info'), 'gauge');
    assert.equal(
      m.find('plantstore_build_info').map((s) => s.labels),
      [{ version }],
    );
    assert.is(m.value('plantstore_build_info', { version }), 1);
  } finally {
    await stop(svc);
  }
});

test('with METRICS_PORT, the API port answers 404 to every method on /metrics', async () => {
  const { svc, base } = await start({ METRICS_PORT: '0' });
  try {
    for (const method of ['GET', 'POST', 'DELETE', 'OPTIONS']) {
      const res = await fetch(`${base}/metrics`, { method });
      assert.is(res.status, 404, method);
      assert.equal(await res.json(), {
        error: 404,
        message: 'no such resource; the API reference is at /docs (and /openapi.json)',
      });
    }
  } finally {
    await stop(svc);
  }
});

test('the METRICS_PORT listener answers what its parser refuses with the Error body and X-Request-Id', async () => {
  const { svc, metricsBase } = await start({ METRICS_PORT: '0' });
  try {
    const res = await rawRequest(Number(new URL(metricsBase).port), ['FOO /metrics HTTP/1.1\r\nHost: x\r\n\r\n']);
    assert.is(res.status, 400);
    assert.is(res.headers['content-type'], 'application/json; charset=utf-8');
    const body = JSON.parse(res.body) as { error: number; message: string };
    assert.is(body.error, 400);
    assert.match(body.message, /malformed HTTP/);
    assert.match(res.headers['x-request-id'] ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
  } finally {
    await stop(svc);
  }
});

test('a METRICS_PORT already in use stops start-up with exit 1 and a line naming it', async () => {
  const first = await start();
  try {
    const port = new URL(first.base).port;
    const second = runNode('bootstrap/main.js', { ...env, METRICS_PORT: port });
    assert.is(await second.exited, 1);
    assert.match(
      second.stderr(),
      /^start-up failed: METRICS_PORT: 127\.0\.0\.1, port \d+ is already in use \(EADDRINUSE\)/,
    );
    assert.not.match(second.stdout(), listening);
  } finally {
    await stop(first.svc);
  }
});

test.run();

const promtool = promtoolBinary();
const checked = suiteWith('GET /metrics checked by promtool', 'skip' in promtool ? promtool : async () => promtool);

checked.test('a scrape taken after traffic passes `promtool check metrics`', async (ctx) => {
  const { bin } = checked.subject(ctx);
  const { svc, base } = await start({ RATE_LIMIT_MAX: '2' });
  try {
    const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    // Every kind of series: a create, a page, a delete, 401, 404, 405, 429, readiness and a parser refusal.
    await fetch(`${base}/plants`, { method: 'POST', headers: auth, body: '{"id": 1, "name": "Fern"}' });
    await fetch(`${base}/plants?limit=1`, { headers: auth });
    await fetch(`${base}/plants/1`, { method: 'DELETE', headers: auth });
    await fetch(`${base}/plants`);
    await fetch(`${base}/nowhere`);
    await fetch(`${base}/healthz`, { method: 'POST' });
    await fetch(`${base}/readyz`);
    await rawRequest(Number(new URL(base).port), ['FOO /plants HTTP/1.1\r\nHost: x\r\n\r\n']);
    const scrape = await (await fetch(`${base}/metrics`)).text();
    const m = parseExposition(scrape);
    assert.is(m.value('plantstore_rate_limit_rejections_total'), 1, 'the traffic reached the rate limit');
    const check = spawnSync(bin, ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
    assert.is(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);
    assert.is(check.stdout + check.stderr, '');
  } finally {
    await stop(svc);
  }
});

checked.run();
