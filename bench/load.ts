/**
 * The load generator, in a process of its own: drives one target with autocannon and prints one JSON line of
 * requests/s and latency percentiles. Argument: a JSON object {url, token, method, seconds, connections, firstId}.
 */
import autocannon from 'autocannon';

interface LoadSpec {
  readonly url: string;
  readonly token: string;
  readonly method: 'GET' | 'POST';
  readonly seconds: number;
  readonly connections: number;
  /** POST only: ids count up from here, so every create is a fresh plant. */
  readonly firstId?: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
let nextId = spec.firstId ?? 1;

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
