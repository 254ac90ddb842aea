import { connect } from 'node:net';
import * as E from 'fp-ts/lib/Either.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { downRepository, downTokenStore } from '../support/fakes.js';
import { rawRequest, type Service, serviceSuite, startService } from '../support/http.js';
import { eventually } from '../support/wait.js';

type Ctx = { svc: Service };
const { test: test, run: run } = serviceSuite('HTTP operational endpoints and common rules');

test('GET /healthz is 200 {"status":"ok"} without a token', async ({ svc }) => {
  const res = await svc.call('GET', '/healthz');
  assert.is(res.status, 200);
  assert.is(res.text, '{"status":"ok"}');
});

test('GET /readyz is 200 {"status":"ready"} when every backend answers', async ({ svc }) => {
  const res = await svc.call('GET', '/readyz');
  assert.is(res.status, 200);
  assert.is(res.text, '{"status":"ready"}');
});

test('HEAD of a GET endpoint answers its headers without a body', async ({ svc }) => {
  const res = await svc.call('HEAD', '/healthz');
  assert.is(res.status, 200);
  assert.is(res.text, '');
});

test('an unknown path is 404 with the Error body; paths are exact and case-sensitive', async ({ svc }) => {
  for (const path of ['/', '/plant', '/PLANTS', '/plants/1/leaves', '/healthz/', '/openapi.yaml', '/%ZZ']) {
    const res = await svc.call('GET', path, { token: svc.token.alice });
    assert.is(res.status, 404, path);
  }
});

test('GET / answers 404 pointing to the API reference page /docs and to /openapi.json', async ({ svc }) => {
  const res = await svc.call('GET', '/');
  assert.is(res.status, 404);
  assert.equal(res.json(), {
    error: 404,
    message: 'no such resource; the API reference is at /docs (and /openapi.json)',
  });
});

test('a known path with another method is 405 with Allow', async ({ svc }) => {
  const cases: Array<[string, string, string]> = [
    ['PUT', '/plants', 'GET, HEAD, POST'],
    ['DELETE', '/plants', 'GET, HEAD, POST'],
    ['PATCH', '/plants', 'GET, HEAD, POST'],
    ['GET', '/plants/1', 'DELETE'],
    ['POST', '/plants/1', 'DELETE'],
    ['PUT', '/plants/1', 'DELETE'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/readyz', 'GET, HEAD'],
    ['PUT', '/openapi.json', 'GET, HEAD'],
    ['OPTIONS', '/plants', 'GET, HEAD, POST'],
  ];
  for (const [method, path, allow] of cases) {
    const res = await svc.call(method, path, { token: svc.token.alice });
    assert.is(res.status, 405, `${method} ${path}`);
    assert.is(res.headers.get('allow'), allow);
  }
});

test('every response carries X-Request-Id, Cache-Control: no-store and nosniff', async ({ svc }) => {
  for (const [method, path] of [
    ['GET', '/healthz'],
    ['GET', '/nowhere'],
    ['PUT', '/plants'],
    ['GET', '/plants'],
    ['DELETE', '/plants/x'],
  ] as const) {
    const res = await svc.call(method, path);
    assert.ok(res.headers.get('x-request-id'), `${method} ${path}`);
    assert.is(res.headers.get('cache-control'), 'no-store');
    assert.is(res.headers.get('x-content-type-options'), 'nosniff');
  }
});

test('the caller’s valid X-Request-Id is echoed and logged; an invalid one is replaced', async ({ svc }) => {
  const id = 'trace-1.2:3_abc-XYZ';
  const echoed = await svc.call('GET', '/healthz', { headers: { 'x-request-id': id } });
  assert.is(echoed.headers.get('x-request-id'), id);
  const line = svc.logs().find((l) => l['reqId'] === id);
  assert.ok(line, 'the log line carries the id');
  assert.is(line?.['status'], 200);
  assert.is(line?.['route'], 'GET /healthz');
  for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', 'slash/id']) {
    const res = await svc.call('GET', '/healthz', { headers: { 'x-request-id': bad } });
    const given = res.headers.get('x-request-id');
    assert.ok(given !== null && given !== bad && /^[A-Za-z0-9._:-]{1,128}$/.test(given), bad);
  }
  const a = (await svc.call('GET', '/healthz')).headers.get('x-request-id');
  const b = (await svc.call('GET', '/healthz')).headers.get('x-request-id');
  assert.is.not(a, b, 'generated ids differ');
});

test('one log line per request names method, route, status, duration and owner, never the path id raw', async ({
  svc,
}) => {
  const id = 'log-line-check';
  await svc.call('DELETE', '/plants/123', { token: svc.token.alice, headers: { 'x-request-id': id } });
  const lines = svc.logs().filter((l) => l['reqId'] === id);
  assert.is(lines.length, 1);
  const line = lines[0] as Record<string, unknown>;
  assert.is(line['method'], 'DELETE');
  assert.is(line['route'], 'DELETE /plants/{id}');
  assert.is(line['status'], 404);
  assert.is(line['owner'], svc.principal.alice.owner);
  assert.type(line['ms'], 'number');
});

test('the OpenAPI document is served and writes the int64 bounds exactly', async ({ svc }) => {
  const res = await svc.call('GET', '/openapi.json');
  assert.is(res.status, 200);
  assert.ok(res.text.includes('"minimum":-9223372036854775808'));
  assert.ok(res.text.includes('"maximum":9223372036854775807'));
  assert.is((res.json() as { openapi: string }).openapi, '3.1.0');
});

test('a request line the server cannot route still gets a JSON 404', async ({ svc }) => {
  const res = await rawRequest(svc.port, ['GET //plants HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
  assert.is(res.status, 404);
  assert.is((JSON.parse(res.body) as { error: number }).error, 404);
});

run();

const faults = suite<Ctx>('HTTP faults', {} as Ctx);

faults('an unexpected fault is 500 {"error":500,"message":"internal error"}, details only in the log', async () => {
  const broken: PlantRepository = {
    ...memoryPlantRepository(),
    page: () => () => Promise.reject(new Error('driver exploded at /secret/path')),
  };
  const svc = await startService({ plants: broken });
  try {
    const res = await svc.call('GET', '/plants', { token: svc.token.alice, headers: { 'x-request-id': 'boom' } });
    assert.is(res.status, 500);
    assert.is(res.text, '{"error":500,"message":"internal error"}');
    const logged = JSON.stringify(svc.logs().filter((l) => l['reqId'] === 'boom'));
    assert.ok(logged.includes('driver exploded'), 'the cause is logged');
    assert.is((await svc.call('GET', '/healthz')).status, 200, 'the service keeps serving');
  } finally {
    await svc.close();
  }
});

faults('/readyz is 503 naming the backend that does not answer, never its address', async () => {
  const storage = await startService({ plants: downRepository });
  const tokens = await startService({ tokens: downTokenStore });
  const both = await startService({ plants: downRepository, tokens: downTokenStore });
  try {
    const s = await storage.call('GET', '/readyz');
    assert.is(s.status, 503);
    assert.is((s.json() as { message: string }).message, 'not ready: storage does not answer');
    assert.is(s.headers.get('retry-after'), '1');
    const t = await tokens.call('GET', '/readyz');
    assert.is((t.json() as { message: string }).message, 'not ready: token store does not answer');
    const b = await both.call('GET', '/readyz');
    assert.is((b.json() as { message: string }).message, 'not ready: storage and token store do not answer');
    assert.is((await storage.call('GET', '/healthz')).status, 200, 'liveness is not readiness');
  } finally {
    await Promise.all([storage.close(), tokens.close(), both.close()]);
  }
});

/**
 * Sends `request` on a socket of its own, waits until `arrived` says the service has it, then closes the socket (or
 * resets it: then nothing can be answered on it).
 */
const sendAndLeave = async (port: number, request: string, arrived: () => boolean, reset = false): Promise<void> => {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(request);
  for (let i = 0; i < 200 && !arrived(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(arrived(), 'the service got the request');
  if (reset) socket.resetAndDestroy();
  else socket.destroy();
  await new Promise((r) => setTimeout(r, 50));
};

faults('a request whose client leaves before its answer still gets its one log line (499) and is counted', async () => {
  let asked = false;
  let answer: () => void = () => undefined;
  const memory = memoryPlantRepository();
  const slow: PlantRepository = {
    ...memory,
    page: () => () => {
      asked = true;
      return new Promise((resolve) => (answer = () => resolve(E.right({ plants: [], more: false }))));
    },
  };
  const observed: Array<[string, string, number]> = [];
  const svc = await startService({ plants: slow, metrics: { observe: (m, r, s) => void observed.push([m, r, s]) } });
  try {
    const head = (id: string, extra: string) =>
      `Host: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nX-Request-Id: ${id}\r\n${extra}\r\n`;
    await sendAndLeave(svc.port, `GET /plants HTTP/1.1\r\n${head('left-early', '')}`, () => asked);
    answer();
    await eventually('the request that was left is logged', () => svc.logs().some((l) => l['reqId'] === 'left-early'));
    const lines = svc.logs().filter((l) => l['reqId'] === 'left-early');
    assert.is(lines.length, 1);
    assert.is(lines[0]?.['status'], 499);
    assert.is(lines[0]?.['answer'], 200);
    assert.is(lines[0]?.['route'], 'GET /plants');
    assert.equal(observed.at(-1), ['GET', 'GET /plants', 499]);

    // A body cut short: a closed connection is answered 400 below the app (and logged there once); a reset one
    // cannot be answered, and is logged 499 here.
    const body = '{"id": 1, "name": "never finished"}';
    for (const [id, reset, status] of [
      ['cut-mid-body', false, 400],
      ['reset-mid-body', true, 499],
    ] as const) {
      const extra = `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`;
      const sentAt = Date.now(); // by 100 ms the service waits for the rest of the body
      await sendAndLeave(
        svc.port,
        `POST /plants HTTP/1.1\r\n${head(id, extra)}${body.slice(0, 10)}`,
        () => Date.now() - sentAt > 100,
        reset,
      );
      const midBody = svc.logs().filter((l) => l['reqId'] === id);
      assert.is(midBody.length, 1, id);
      assert.is(midBody[0]?.['status'], status, id);
    }
  } finally {
    await svc.close();
  }
});

faults.run();
