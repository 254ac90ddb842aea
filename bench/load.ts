/**
 * The load generator, in a process of its own: drives one target with autocannon and prints one JSON line of
 * requests/s and latency percentiles. Argument: a JSON object {url, token, method, seconds, connections, firstId}.
 * With `probe: N` it sends N GETs one after another on one keep-alive connection instead, and reports latency
 * percentiles with microsecond precision (autocannon's are whole milliseconds).
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
  readonly probe?: number;
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
  process.stdout.write(JSON.stringify({ rps: 0, p50: at(0.5), p99: at(0.99), requests: times.length, bad: 0 }) + '\n');
  agent.destroy();
  process.exit(0);
}

const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.seconds,
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
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    bad,
  }) + '\n',
);
