import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import {
  freePort,
  prometheusBinary,
  redisBinary,
  startPrometheus,
  startRedis,
  type RunningServer,
} from '../../harness/servers.js';
import { runNode, type Started } from '../support/process.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

/**
 * The operator kit against a real Prometheus: Debian's `prometheus` scrapes the service process (AUTH=redis, tracing
 * on towards a collector nobody runs, so that every metric the dashboard reads exists) every second and evaluates
 * ops/prometheus/rules.yml every second, with each alert's `for` shortened to 5 s (the unit tests of
 * prometheus-rules.test.ts hold the real ones). The test drives traffic, stops Redis, and reads Prometheus's HTTP API.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const prometheus = prometheusBinary();
const redis = redisBinary();

interface Subject {
  readonly redis: RunningServer;
  readonly prometheus: RunningServer;
  readonly service: Started;
  readonly base: string;
  readonly token: string;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'ops/ kit against a real Prometheus scraping the service [Prometheus, Redis]',
  'skip' in prometheus
    ? prometheus
    : 'skip' in redis
      ? redis
      : async () => {
          const tokens = await startRedis(redis.bin);
          const env = {
            PORT: '0',
            HOST: '127.0.0.1',
            AUTH: 'redis',
            REDIS_URL: tokens.uri,
            TOKEN_CACHE_TTL_MS: '0',
            AUTH_TIMEOUT_MS: '200',
            OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
            OTEL_BSP_SCHEDULE_DELAY: '10',
          };
          const cli = runNode('bootstrap/token-cli.js', env, [
            'issue',
            '--owner',
            'acme',
            '--subject',
            'ops',
            '--scopes',
            'plants:read,plants:write',
          ]);
          assert.is(await cli.exited, 0, cli.stderr());
          const token = cli.stdout().trimEnd().split('\n').at(-1) ?? '';
          const service = runNode('bootstrap/main.js', env);
          await service.waitFor(/"msg":"listening"/);
          const port = Number(/"port":(\d+)/.exec(service.stdout())?.[1]);
          const rules = readFileSync(join(root, 'ops', 'prometheus', 'rules.yml'), 'utf8').replace(
            /^(\s+)for: \S+$/gm,
            '$1for: 5s',
          );
          const server = await startPrometheus(
            prometheus.bin,
            [
              'global:',
              '  scrape_interval: 1s',
              '  evaluation_interval: 1s',
              'rule_files: [rules.yml]',
              'scrape_configs:',
              '  - job_name: plant-store',
              '    static_configs:',
              `      - targets: ['127.0.0.1:${port}']`,
              '',
            ].join('\n'),
            { 'rules.yml': rules },
          );
          return {
            redis: tokens,
            prometheus: server,
            service,
            base: `http://127.0.0.1:${port}`,
            token,
            teardown: async () => {
              service.child.kill('SIGTERM');
              await service.exited;
              await server.dispose();
              await tokens.dispose();
            },
          };
        },
);

interface QueryResult {
  readonly status: string;
  readonly error?: string;
  readonly data?: { readonly result: ReadonlyArray<{ readonly metric: Record<string, string> }> };
}

const query = async (prometheusUri: string, expr: string): Promise<QueryResult> =>
  (await (await fetch(`${prometheusUri}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as QueryResult;

/** Every query of the dashboard, with Grafana's `$__rate_interval` and `$instance` (All) as Prometheus can read them. */
const dashboardQueries = (): string[] => {
  const dashboard = JSON.parse(readFileSync(join(root, 'ops', 'grafana', 'plant-store.json'), 'utf8')) as {
    panels: Array<{ targets: Array<{ expr: string }> }>;
  };
  return dashboard.panels.flatMap((p) =>
    p.targets.map((t) => t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*')),
  );
};

/** A round of traffic over every route kind: creates, lists, a delete, a 404, the probes. */
const traffic = async (base: string, token: string, round: number) => {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  await fetch(`${base}/plants`, { method: 'POST', headers, body: JSON.stringify({ id: round, name: 'Fern' }) });
  await fetch(`${base}/plants?limit=5`, { headers });
  await fetch(`${base}/plants/${round}`, { method: 'DELETE', headers });
  await fetch(`${base}/nowhere`);
  await fetch(`${base}/healthz`);
  await fetch(`${base}/readyz`);
};

test('with traffic and then Redis stopped, every dashboard query returns data and PlantStoreBackendDown fires', async (ctx) => {
  const { prometheus: prom, redis: tokens, base, token } = subject(ctx);
  let round = 0;
  // Traffic until Prometheus has seen requests in two scrapes at least (a rate needs two samples).
  await eventually(
    'request rates in Prometheus',
    async () => {
      await traffic(base, token, (round += 1));
      const rates = await query(prom.uri, 'job:plantstore_http_requests:rate5m > 0');
      return (rates.data?.result.length ?? 0) > 0;
    },
    { timeoutMs: 60_000, everyMs: 200 },
  );
  await tokens.stop();
  const alert = await eventually(
    'PlantStoreBackendDown firing for the token store',
    async () => {
      await traffic(base, token, (round += 1));
      const { data } = (await (await fetch(`${prom.uri}/api/v1/alerts`)).json()) as {
        data: { alerts: Array<{ labels: Record<string, string>; state: string }> };
      };
      return data.alerts.find(
        (a) =>
          a.labels['alertname'] === 'PlantStoreBackendDown' &&
          a.labels['backend'] === 'token_store' &&
          a.state === 'firing',
      );
    },
    { timeoutMs: 90_000, everyMs: 500 },
  );
  assert.is(alert.labels['severity'], 'critical');

  const queries = dashboardQueries();
  assert.ok(queries.length >= 10);
  let last: Record<string, string> = {};
  await eventually(
    'every dashboard query evaluates and returns data',
    async () => {
      await traffic(base, token, (round += 1));
      const results = await Promise.all(queries.map(async (q) => [q, await query(prom.uri, q)] as const));
      last = Object.fromEntries(
        results
          .filter(([, r]) => r.status !== 'success' || (r.data?.result.length ?? 0) === 0)
          .map(([q, r]) => [q, r.error ?? 'no data']),
      );
      return Object.keys(last).length === 0;
    },
    { timeoutMs: 60_000, everyMs: 500, detail: () => JSON.stringify(last) },
  );
});

run();
