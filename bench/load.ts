/**
 * The load generator, in a process of its own: drives one target with autocannon and prints one JSON line of
 * requests/s and latency percentiles. Argument: a JSON object {url, token, method, seconds, connections, firstId}.
 * With `amount: N` it sends exactly N requests instead of running for `seconds`, so that the requests it counts can be
 * compared with what the server counted (none is cut off in flight at the end). With `probe: N` it sends N GETs one
 * after another on one keep-alive connection instead, and reports latency percentiles with microsecond precision
 * (autocannon's are whole milliseconds).
 */
import { Agent, request } from 'node:http';
import autocannon from 'autocannon';

interface LoadSpec {
  readonly url: string;
  readonly token: string;
  readonly method: 'GET' | 'POST';
  readonly seconds: number;
  readonly connections: number;
  /** POST only: ids count up from here, so every create is a fresh plant. */
  readonly firstId?: number;
  readonly amount?: number;
  readonly probe?: number;
  /** Requests per second over all connections (autocannon's overallRate): an open load instead of as fast as served. */
  readonly rate?: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
let nextId = spec.firstId ?? 1;

if (spec.probe !== undefined) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      request(spec.url, { agent, headers: { authorization: `Bearer ${spec.token}` } }, (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`status ${res.statusCode}`)),
        );
      })
        .on('error', reject)
        .end();
    });
  for (let i = 0; i < spec.probe; i++) await once(); // warm-up, not counted
  const times: number[] = [];
  for (let i = 0; i < spec.probe; i++) times.push(await once());
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] as number;
  const n = times.length;
  process.stdout.write(
    JSON.stringify({ rps: 0, p50: at(0.5), p99: at(0.99), requests: n, sent: n, ok: n, bad: 0 }) + '\n',
  );
  agent.destroy();
  process.exit(0);
}

const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  ...(spec.rate === undefined ? {} : { overallRate: spec.rate }),
  // With an amount, the results come at the first sample after the last answer: sampled often, that is at once.
  ...(spec.amount === undefined ? { duration: spec.seconds } : { amount: spec.amount, sampleInt: 50 }),
  method: spec.method,
  headers: { authorization: `Bearer ${spec.token}`, 'content-type': 'application/json' },
  ...(spec.method === 'POST'
    ? {
        requests: [
          {
            method: 'POST',
            setupRequest: (req: autocannon.Request) => ({
              ...req,
              body: `{"id":${nextId++},"name":"bench plant","tag":"b"}`,
            }),
          },
        ],
      }
    : {}),
});

const bad = result.non2xx + result.errors + result.timeouts;
process.stdout.write(
  JSON.stringify({
    // A run of an amount is short: its rate is what it answered over the time it took, not a per-second sample.
    rps: spec.amount === undefined ? result.requests.average : result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    sent: result.requests.sent,
    ok: result['2xx'],
    bad,
  }) + '\n',
);
