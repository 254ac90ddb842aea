import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import {
  alertmanagerBinary,
  ferretDbBinary,
  prometheusBinary,
  startAlertmanager,
  startFerretDb,
  startPrometheus,
  type RunningServer,
} from '../../harness/servers.js';
import { runNode, type Started } from '../support/process.js';
import { suiteWith } from '../support/suites.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * One storage outage through the shipped alerting, live: the service on FerretDB, Debian's Prometheus scraping it and
 * evaluating ops/prometheus/rules.yml, Debian's Alertmanager with ops/alertmanager/alertmanager.yml, whose receivers
 * are a webhook served here. Both files are used as shipped, with every duration in them (windows, `for`,
 * `keep_firing_for`, group waits) divided by SCALE: a minute of theirs is a second here, and Prometheus scrapes and
 * evaluates every second. The rules' unit tests (prometheus-rules.test.ts) hold the real durations.
 */
const SCALE = 60;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const prometheus = prometheusBinary();
const alertmanager = alertmanagerBinary();
const ferretdb = ferretDbBinary();
const TOKEN = 'alerting-live-test-token';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** Every Prometheus duration in a range selector or after a duration key, divided by SCALE (in milliseconds). */
const timeScaled = (yaml: string): string =>
  yaml.replace(
    /(\[|(?:for|keep_firing_for|group_wait|group_interval|repeat_interval): )(\d+)(ms|s|m|h|d)\b/g,
    (_, before: string, n: string, unit: string) =>
      `${before}${Math.max(1, Math.round((Number(n) * (UNIT_MS[unit] ?? 0)) / SCALE))}ms`,
  );

interface Notification {
  readonly at: number;
  readonly receiver: string;
  readonly status: string;
  readonly alerts: ReadonlyArray<{ readonly status: string; readonly labels: Record<string, string> }>;
}

interface Subject {
  readonly storage: RunningServer;
  readonly prometheus: RunningServer;
  readonly alertmanager: RunningServer;
  readonly service: Started;
  readonly base: string;
  readonly received: Notification[];
  readonly teardown: () => Promise<void>;
}

/** The webhook receiver: every notification Alertmanager posts, with the path (`/page`, `/ticket`) it came to. */
const webhook = async (received: Notification[]): Promise<Server & { port: number }> => {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const n = JSON.parse(body) as Omit<Notification, 'at' | 'receiver'>;
      received.push({ at: performance.now(), receiver: req.url ?? '', status: n.status, alerts: n.alerts });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(server, { port: (server.address() as AddressInfo).port });
};

const { test, subject, run } = suiteWith<Subject>(
  'one storage outage pages once through the shipped rules and Alertmanager [Prometheus, Alertmanager, FerretDB]',
  'skip' in prometheus
    ? prometheus
    : 'skip' in alertmanager
      ? alertmanager
      : 'skip' in ferretdb
        ? ferretdb
        : async () => {
            const received: Notification[] = [];
            const hook = await webhook(received);
            const storage = await startFerretDb(ferretdb.bin);
            const service = runNode('bootstrap/main.js', {
              PORT: '0',
              HOST: '127.0.0.1',
              STORAGE: 'mongodb',
              MONGODB_URI: storage.uri,
              MONGODB_DB: 'alerting',
              // Long enough that a slow moment of FerretDB on a loaded machine is no outage: with every duration of the
              // rules divided by 60, a second of 503s would be a minute of them to the alerts.
              STORAGE_TIMEOUT_MS: '5000',
              AUTH_TOKENS: JSON.stringify([
                { token: TOKEN, owner: 'acme', subject: 'ops', scopes: ['plants:read', 'plants:write'] },
              ]),
            });
            await service.waitFor(/"msg":"listening"/);
            const port = Number(/"port":(\d+)/.exec(service.stdout())?.[1]);
            const am = await startAlertmanager(
              alertmanager.bin,
              timeScaled(readFileSync(join(root, 'ops', 'alertmanager', 'alertmanager.yml'), 'utf8')).replaceAll(
                'http://127.0.0.1:5001/',
                `http://127.0.0.1:${hook.port}/`,
              ),
            );
            const prom = await startPrometheus(
              prometheus.bin,
              [
                'global:',
                '  scrape_interval: 1s',
                '  evaluation_interval: 1s',
                'rule_files: [rules.yml]',
                'alerting:',
                '  alertmanagers:',
                '    - static_configs:',
                `        - targets: ['127.0.0.1:${am.port}']`,
                'scrape_configs:',
                '  - job_name: plant-store',
                '    static_configs:',
                `      - targets: ['127.0.0.1:${port}']`,
                '',
              ].join('\n'),
              { 'rules.yml': timeScaled(readFileSync(join(root, 'ops', 'prometheus', 'rules.yml'), 'utf8')) },
            );
            return {
              storage,
              prometheus: prom,
              alertmanager: am,
              service,
              base: `http://127.0.0.1:${port}`,
              received,
              teardown: async () => {
                service.child.kill('SIGTERM');
                await service.exited;
                await prom.dispose();
                await am.dispose();
                await storage.dispose();
                await new Promise((resolve) => hook.close(resolve));
              },
            };
          },
);

interface PromAlert {
  readonly labels: Record<string, string>;
  readonly state: string;
}

const promAlerts = async (uri: string): Promise<PromAlert[]> =>
  ((await (await fetch(`${uri}/api/v1/alerts`)).json()) as { data: { alerts: PromAlert[] } }).data.alerts;

const firingIn = async (uri: string, name: string) =>
  (await promAlerts(uri)).some((a) => a.labels['alertname'] === name && a.state === 'firing');

/** Alertmanager's view: each alert it holds and whether it is suppressed (inhibited) or active. */
const amAlerts = async (uri: string) =>
  (await (await fetch(`${uri}/api/v2/alerts`)).json()) as Array<{
    labels: Record<string, string>;
    status: { state: string; inhibitedBy: string[] };
  }>;

test('storage stopped: one page (PlantStoreBackendDown), its symptoms inhibited, resolved after the return', async (ctx) => {
  const { storage, prometheus: prom, alertmanager: am, base, received } = subject(ctx);
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  let driving = true;
  let id = 0;
  // Steady API traffic, as clients keep sending through an outage: a create, a list and a readiness probe, round after
  // round (each round waits for the last, so that requests held by a slow FerretDB on a shared machine do not pile up).
  const traffic = (async () => {
    while (driving) {
      id += 1;
      await Promise.all([
        fetch(`${base}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name: 'Fern' }) }),
        fetch(`${base}/plants?limit=5`, { headers }),
        fetch(`${base}/readyz`),
      ]).catch(() => undefined);
      await sleep(100);
    }
  })();
  const pages = () => received.filter((n) => n.receiver === '/page');
  try {
    await eventually(
      'an error share of 0 in Prometheus (traffic seen, nothing failing)',
      async () => {
        const r = (await (
          await fetch(`${prom.uri}/api/v1/query?query=job:plantstore_slo_errors:ratio_rate1h==0`)
        ).json()) as { data: { result: unknown[] } };
        return r.data.result.length > 0;
      },
      { timeoutMs: 60_000, everyMs: 250 },
    );
    assert.equal(received, [], 'nothing notified before the outage');

    await storage.stop();
    const stoppedAt = performance.now();
    const page = await eventually('a page', () => pages()[0], { timeoutMs: 60_000, everyMs: 100 });
    assert.is(page.status, 'firing');
    assert.equal(
      page.alerts.map((a) => [a.labels['alertname'], a.labels['backend']]),
      [['PlantStoreBackendDown', 'storage']],
    );
    // The symptoms fire in Prometheus, and Alertmanager holds them back.
    let seen = '';
    await eventually(
      'the burn and readiness alerts firing in Prometheus and inhibited in Alertmanager',
      async () => {
        const held = await amAlerts(am.uri);
        seen = JSON.stringify(held.map((a) => [a.labels['alertname'], a.status.state]));
        const suppressed = (name: string) =>
          held.some((a) => a.labels['alertname'] === name && a.status.state === 'suppressed');
        return (
          suppressed('PlantStoreErrorBudgetBurn') &&
          suppressed('PlantStoreNotReady') &&
          (await firingIn(prom.uri, 'PlantStoreErrorBudgetBurn'))
        );
      },
      { timeoutMs: 60_000, everyMs: 250, detail: () => seen },
    );
    const pagedAfterMs = page.at - stoppedAt;
    const outageMs = performance.now() - stoppedAt;

    const restartedAt = performance.now();
    await storage.start();
    let state = '';
    const resolved = await eventually(
      'the page resolved',
      async () => {
        state = JSON.stringify((await promAlerts(prom.uri)).map((a) => [a.labels['alertname'], a.state]));
        return pages().find((n) => n.status === 'resolved');
      },
      {
        timeoutMs: 60_000,
        everyMs: 250,
        detail: () => `alerts in Prometheus: ${state}; pages: ${JSON.stringify(pages())}`,
      },
    );
    assert.equal(
      resolved.alerts.map((a) => a.labels['alertname']),
      ['PlantStoreBackendDown'],
    );
    const resolvedAfterMs = resolved.at - restartedAt;
    // The symptoms outlive the outage in their windows; the inhibiting alert outlives them. After it ends, and one
    // group interval (5 s here) for a notification that would follow, still nothing else has paged.
    await eventually(
      'PlantStoreBackendOutage ended',
      async () => !(await promAlerts(prom.uri)).some((a) => a.labels['alertname'] === 'PlantStoreBackendOutage'),
      { timeoutMs: 90_000, everyMs: 250 },
    );
    await sleep(Math.ceil((5 * 60_000) / SCALE) + 3000);
    assert.equal(
      pages().map((n) => [n.status, n.alerts.map((a) => a.labels['alertname']).join()]),
      [
        ['firing', 'PlantStoreBackendDown'],
        ['resolved', 'PlantStoreBackendDown'],
      ],
    );
    process.stdout.write(
      `\n  storage outage of ${(outageMs / 1000).toFixed(1)} s (x${SCALE}: ${((outageMs * SCALE) / 60_000).toFixed(1)} min):` +
        ` paged after ${(pagedAfterMs / 1000).toFixed(1)} s (x${SCALE}: ${((pagedAfterMs * SCALE) / 60_000).toFixed(1)} min),` +
        ` resolved ${(resolvedAfterMs / 1000).toFixed(1)} s after the return (x${SCALE}: ${((resolvedAfterMs * SCALE) / 60_000).toFixed(1)} min);` +
        ` tickets: ${JSON.stringify(
          received
            .filter((n) => n.receiver === '/ticket')
            .map((n) => [n.status, n.alerts.map((a) => a.labels['alertname']).join()]),
        )}\n`,
    );
  } finally {
    driving = false;
    await traffic;
  }
});

run();
