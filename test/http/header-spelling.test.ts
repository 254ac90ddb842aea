import { connect, type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { memoryRateLimiter } from '../../adapters/rate-limit/memory/memory-rate-limiter.js';
import { serviceMetrics } from '../../adapters/observability/metrics.js';
import { metricsServer } from '../../adapters/http/metrics-listener.js';
import { defaultServerLimits } from '../../adapters/http/server/server.js';
import { downRepository } from '../support/fakes.js';
import { startService, type Service } from '../support/http.js';

/**
 * Response field names go out in the spelling the served OpenAPI document gives them (`Link`, `X-Request-Id`,
 * `Quota-Used`, ...), read from the raw bytes of the wire: HTTP field names are case-insensitive, but some generated
 * clients (openapi-generator's Python) hand back a case-sensitive dict, where `headers.get("Link")` finds nothing
 * in `link`. Every operation and status the test can provoke is checked against the headers the document declares for
 * it (through `$ref`s into components/responses and components/headers), and every header the document declares must
 * have been seen on the wire at least once.
 */

interface Wire {
  readonly status: number;
  /** Field names as sent, in order. */
  readonly names: readonly string[];
  /** Field values by lower-case name. */
  readonly fields: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * One request on its own connection (`Connection: close`), its response read to the end, field names as sent. A
 * `partial` request is written without ending our side, so that the server has to wait for the rest.
 */
const exchange = (port: number, request: string, partial = false): Promise<Wire> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const data = Buffer.concat(chunks).toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no response head: ${JSON.stringify(data.slice(0, 200))}`));
      const [statusLine = '', ...lines] = data.slice(0, end).split('\r\n');
      const names: string[] = [];
      const fields: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon);
        names.push(name);
        fields[name.toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), names, fields, body: data.slice(end + 4) });
    });
    if (partial) socket.write(request);
    else socket.end(request);
  });

const requestText = (
  method: string,
  path: string,
  { token, headers = {}, body }: { token?: string; headers?: Record<string, string>; body?: string } = {},
): string => {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost', 'Connection: close'];
  if (token !== undefined) lines.push(`Authorization: Bearer ${token}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) {
    if (!('Content-Type' in headers)) lines.push('Content-Type: application/json');
    if (!('Content-Length' in headers)) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
};

type Node = { $ref?: string; required?: boolean; headers?: Record<string, Node>; responses?: Record<string, Node> };
type Doc = { paths: Record<string, Record<string, Node>>; components: Record<string, Record<string, Node>> };

const documentOf = (text: string) => {
  const doc = JSON.parse(text) as Doc;
  const deref = (node: Node): Node => {
    let n = node;
    for (let hops = 0; n.$ref !== undefined; hops++) {
      if (hops > 10) throw new Error(`$ref loop at ${node.$ref}`);
      n = n.$ref
        .slice(2)
        .split('/')
        .reduce<unknown>(
          (at, key) => (at as Record<string, unknown>)[key.replace(/~1/g, '/').replace(/~0/g, '~')],
          doc,
        ) as Node;
    }
    return n;
  };
  /** Declared response headers by name, with whether each is required. */
  const headersOf = (response: Node): Map<string, boolean> =>
    new Map(Object.entries(deref(response).headers ?? {}).map(([name, h]) => [name, deref(h).required === true]));
  const declared = new Set<string>();
  for (const item of Object.values(doc.paths)) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses ?? {})) {
        for (const name of headersOf(response).keys()) declared.add(name);
      }
    }
  }
  const templateOf = (path: string): string | undefined => {
    const bare = path.split('?')[0] ?? '';
    if (bare in doc.paths) return bare;
    return /^\/plants\/[^/]*$/.test(bare) ? '/plants/{id}' : undefined;
  };
  /** The headers the document declares for this method, path and status; undefined when it describes none. */
  const expected = (method: string, path: string, status: number): Map<string, boolean> | undefined => {
    const template = templateOf(path);
    if (template === undefined) return undefined;
    const operation = doc.paths[template]?.[method === 'HEAD' ? 'get' : method.toLowerCase()];
    const response = operation?.responses?.[String(status)] ?? operation?.responses?.['default'];
    return response === undefined ? undefined : headersOf(response);
  };
  return { declared, expected };
};

interface Case {
  readonly svc: Service;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly request?: string;
  readonly partial?: true;
  readonly token?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

test('every response field goes out in the spelling the served OpenAPI document declares', async () => {
  const metrics = serviceMetrics();
  const svc = await startService({
    limiter: memoryRateLimiter({ max: 30, windowMs: 60_000 }),
    maxPlantsPerOwner: 2,
    metricsEndpoint: metrics.exposition,
  });
  const down = await startService({ plants: downRepository });
  const slow = await startService({}, { headersTimeoutMs: 200, requestTimeoutMs: 400 });
  try {
    const doc = documentOf(await (await fetch(`${svc.base}/openapi.json`)).text());
    const asset = /src="docs\/([^"]+)"/.exec(await (await fetch(`${svc.base}/docs`)).text())?.[1] ?? 'missing';
    const { alice, aliceReader, bob } = svc.token;
    const cases: Case[] = [
      { svc, method: 'GET', path: '/healthz', status: 200 },
      { svc, method: 'HEAD', path: '/healthz', status: 200 },
      { svc, method: 'POST', path: '/healthz', status: 405 },
      { svc, method: 'GET', path: '/readyz', status: 200 },
      { svc: down, method: 'GET', path: '/readyz', status: 503 },
      { svc, method: 'GET', path: '/openapi.json', status: 200 },
      { svc, method: 'GET', path: '/docs', status: 200 },
      { svc, method: 'GET', path: `/docs/${asset}`, status: 200 },
      { svc, method: 'GET', path: '/docs/none.js', status: 404 },
      { svc, method: 'GET', path: '/metrics', status: 200 },
      { svc, method: 'GET', path: '/nowhere', status: 404 },
      { svc, method: 'GET', path: '/plants', status: 401 },
      { svc, method: 'GET', path: '/plants', status: 401, token: 'unknown-token' },
      { svc, method: 'POST', path: '/plants', status: 200, token: alice, body: '{"id":1,"name":"Fern"}' },
      { svc, method: 'POST', path: '/plants', status: 200, token: alice, body: '{"id":2,"name":"Ivy"}' },
      { svc, method: 'POST', path: '/plants', status: 403, token: alice, body: '{"id":3,"name":"Moss"}' },
      { svc, method: 'POST', path: '/plants', status: 403, token: aliceReader, body: '{"id":4,"name":"Moss"}' },
      { svc, method: 'POST', path: '/plants', status: 409, token: alice, body: '{"id":1,"name":"Other"}' },
      { svc, method: 'POST', path: '/plants', status: 400, token: alice, body: '{"id":1}' },
      {
        svc,
        method: 'POST',
        path: '/plants',
        status: 415,
        token: alice,
        body: '{}',
        headers: { 'Content-Type': 'text/plain' },
      },
      {
        svc,
        method: 'POST',
        path: '/plants',
        status: 413,
        token: alice,
        body: '',
        headers: { 'Content-Length': '1000000' },
      },
      { svc, method: 'GET', path: '/plants?limit=1', status: 200, token: aliceReader },
      { svc, method: 'GET', path: '/plants?limit=0', status: 400, token: alice },
      { svc, method: 'DELETE', path: '/plants/2', status: 204, token: alice },
      { svc, method: 'DELETE', path: '/plants/2', status: 404, token: alice },
      { svc, method: 'DELETE', path: '/plants/x', status: 400, token: alice },
      { svc, method: 'PUT', path: '/plants', status: 405, token: alice },
      { svc: down, method: 'GET', path: '/plants', status: 503, token: down.token.alice },
      // Answered below the routes (adapters/http/transport): two Host fields, an Expect, headers too large, too slow.
      {
        svc,
        method: 'GET',
        path: '/plants',
        status: 400,
        request: 'GET /plants HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
      },
      { svc, method: 'GET', path: '/plants', status: 417, headers: { Expect: 'something' } },
      { svc, method: 'GET', path: '/plants', status: 431, headers: { 'X-Big': 'x'.repeat(20_000) } },
      {
        svc: slow,
        method: 'GET',
        path: '/plants',
        status: 408,
        request: 'GET /plants HTTP/1.1\r\nHost: a\r\n',
        partial: true,
      },
      // Not even a request line: answered on the bare socket.
      { svc, method: 'GET', path: '/plants', status: 400, request: 'NOT HTTP\r\n\r\n' },
    ];
    for (let i = 0; i < 31; i++)
      cases.push({ svc, method: 'GET', path: '/plants', status: i < 30 ? 200 : 429, token: bob });

    const seen = new Set<string>();
    for (const c of cases) {
      const what = `${c.method} ${c.path} ${c.status}`;
      const res = await exchange(
        c.svc.port,
        c.request ??
          requestText(c.method, c.path, {
            ...(c.token === undefined ? {} : { token: c.token }),
            ...(c.headers === undefined ? {} : { headers: c.headers }),
            ...(c.body === undefined ? {} : { body: c.body }),
          }),
        c.partial,
      );
      assert.is(res.status, c.status, `${what}: ${res.body}`);
      for (const name of res.names) {
        assert.ok(/^[A-Z]/.test(name), `${what}: ${name} goes out lower-case`);
      }
      const expected = doc.expected(c.method, c.path, c.status);
      for (const [name, required] of expected ?? []) {
        const sent = res.names.filter((n) => n.toLowerCase() === name.toLowerCase());
        if (required) assert.ok(sent.length > 0, `${what}: ${name} is required and was not sent`);
        for (const spelled of sent) assert.is(spelled, name, `${what}: spelled as the document spells it`);
        if (sent.length > 0) seen.add(name);
      }
    }
    const unseen = [...doc.declared].filter((name) => !seen.has(name));
    assert.equal(unseen, [], 'every header the document declares was seen on the wire');
  } finally {
    await Promise.all([svc.close(), down.close(), slow.close()]);
  }
});

test('the metrics listener (METRICS_PORT) spells its fields as the API does', async () => {
  const server = metricsServer(serviceMetrics().exposition, {
    logger: pino({ level: 'silent' }),
    limits: defaultServerLimits,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    for (const [path, method, status] of [
      ['/metrics', 'GET', 200],
      ['/metrics', 'POST', 405],
      ['/other', 'GET', 404],
    ] as const) {
      const res = await exchange(port, requestText(method, path));
      assert.is(res.status, status);
      for (const name of ['X-Request-Id', 'Cache-Control', 'X-Content-Type-Options', 'Content-Type']) {
        assert.ok(res.names.includes(name), `${method} ${path}: ${name} in ${res.names.join(', ')}`);
      }
      for (const name of res.names) assert.ok(/^[A-Z]/.test(name), `${method} ${path}: ${name} goes out lower-case`);
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test.run();
