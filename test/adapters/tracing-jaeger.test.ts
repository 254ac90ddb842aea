import { randomBytes } from 'node:crypto';
import * as assert from 'uvu/assert';
import {
  ferretDbBinary,
  jaegerBinary,
  redisBinary,
  sharedFerretDb,
  sharedRedis,
  startJaeger,
  type RunningJaeger,
} from '../../harness/servers.js';
import { runNode, type Started } from '../support/process.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';

/**
 * Traces read back from a real collector: the service process (STORAGE=mongodb on FerretDB, AUTH=redis) exports to
 * Jaeger's OTLP receiver, and each test reads the trace back through Jaeger's query API.
 */
const ferret = ferretDbBinary();
const redis = redisBinary();
const jaeger = jaegerBinary();

interface Subject {
  readonly jaeger: RunningJaeger;
  readonly env: Record<string, string>;
  readonly token: string;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'tracing to Jaeger [FerretDB, Redis, Jaeger]',
  'skip' in ferret
    ? ferret
    : 'skip' in redis
      ? redis
      : 'skip' in jaeger
        ? jaeger
        : async () => {
            const [mongo, tokens, collector] = await Promise.all([
              sharedFerretDb(ferret.bin),
              sharedRedis(redis.bin),
              startJaeger(jaeger.bin),
            ]);
            const env = {
              PORT: '0',
              HOST: '127.0.0.1',
              STORAGE: 'mongodb',
              MONGODB_URI: mongo.uri,
              MONGODB_DB: `plantstore_tracing_${process.pid}`,
              AUTH: 'redis',
              REDIS_URL: tokens.uri,
              OTEL_EXPORTER_OTLP_ENDPOINT: collector.uri,
              // Read by the SDK's batch processor: export a batch 100 ms after its first span, not 5 s.
              OTEL_BSP_SCHEDULE_DELAY: '100',
            };
            const cli = runNode('bootstrap/token-cli.js', env, [
              'issue',
              '--owner',
              'acme',
              '--subject',
              'tracing',
              '--scopes',
              'plants:read,plants:write',
            ]);
            assert.is(await cli.exited, 0, cli.stderr());
            const token = cli.stdout().trimEnd().split('\n').at(-1) ?? '';
            return { jaeger: collector, env, token, teardown: () => collector.dispose() };
          },
);

interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references: ReadonlyArray<{ readonly refType: string; readonly traceID: string; readonly spanID: string }>;
  readonly tags: ReadonlyArray<{ readonly key: string; readonly value: unknown }>;
  readonly processID: string;
}
interface JaegerTrace {
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<
    Record<string, { readonly serviceName: string; readonly tags?: ReadonlyArray<{ key: string; value: unknown }> }>
  >;
}

/** The trace as Jaeger's query API has it once it holds `spans` spans or more; with the raw JSON text. */
const traceFrom = (jaeger: RunningJaeger, traceId: string, spans: number) =>
  eventually(
    `trace ${traceId} with ${spans} spans in Jaeger`,
    async () => {
      const response = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
      if (response.status !== 200) return undefined;
      const text = await response.text();
      const found = (JSON.parse(text) as { data: JaegerTrace[] }).data[0];
      return found !== undefined && found.spans.length >= spans ? { trace: found, text } : undefined;
    },
    { timeoutMs: 30_000, everyMs: 100 },
  );

const tag = (span: JaegerSpan, key: string): unknown => span.tags.find((t) => t.key === key)?.value;
const parentOf = (span: JaegerSpan) => span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;

const serve = async (env: Record<string, string>): Promise<{ base: string; process: Started }> => {
  const svc = runNode('bootstrap/main.js', env);
  await svc.waitFor(/"msg":"listening"/);
  return { base: `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`, process: svc };
};

const stop = async (svc: Started) => {
  svc.child.kill('SIGTERM');
  assert.is(await svc.exited, 0, svc.stderr());
};

/** The `request` log line of the request with this id (written just after its response: waited for). */
const requestLine = async (svc: Started, reqId: string): Promise<Record<string, unknown>> => {
  const [line] = await svc.waitFor(new RegExp(`^.*"reqId":"${reqId}".*"msg":"request".*$`, 'm'));
  return JSON.parse(line) as Record<string, unknown>;
};

test("a create with a traceparent is a child of the caller's span, with storage and token spans of its own", async (ctx) => {
  const { jaeger, env, token } = subject(ctx);
  const svc = await serve(env);
  const traceId = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  try {
    const created = await fetch(`${svc.base}/plants`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${callerSpan}-01`,
        'x-request-id': 'traced-create',
      },
      body: JSON.stringify({ id: 4711, name: 'Traced fern', tag: 'secret-ish body text' }),
    });
    assert.is(created.status, 200);
    const { trace, text } = await traceFrom(jaeger, traceId, 3);
    const server = trace.spans.find((s) => tag(s, 'span.kind') === 'server');
    assert.ok(server !== undefined, 'a server span');
    assert.is(server.traceID, traceId);
    assert.is(server.operationName, 'POST /plants');
    assert.is(parentOf(server), callerSpan, "the server span's parent is the caller's span");
    assert.is(tag(server, 'http.request.method'), 'POST');
    assert.is(tag(server, 'http.route'), '/plants');
    assert.is(tag(server, 'http.response.status_code'), 200);
    assert.is(trace.processes[server.processID]?.serviceName, 'plant-store');

    const children = trace.spans.filter((s) => parentOf(s) === server.spanID);
    const storage = children.find((s) => tag(s, 'plantstore.backend') === 'storage');
    assert.ok(storage !== undefined, 'a storage span under the server span');
    assert.is(storage.operationName, 'insert plants');
    assert.is(tag(storage, 'db.system.name'), 'mongodb');
    assert.is(tag(storage, 'db.operation.name'), 'insert');
    assert.is(tag(storage, 'db.collection.name'), 'plants');
    assert.is(tag(storage, 'db.namespace'), env['MONGODB_DB']);
    const tokens = children.find((s) => tag(s, 'plantstore.backend') === 'token store');
    assert.ok(tokens !== undefined, 'a token span under the server span');
    assert.is(tokens.operationName, 'token store verify');
    assert.is(tag(tokens, 'db.system.name'), 'redis');

    assert.not.ok(text.includes(token), 'the token appears nowhere in the trace');
    assert.not.ok(text.includes('secret-ish body text'), 'nor does the request body');
    const line = await requestLine(svc.process, 'traced-create');
    assert.is(line['trace_id'], traceId);
    assert.is(line['span_id'], server.spanID);
  } finally {
    await stop(svc.process);
  }
});

test('an invalid traceparent starts a new trace, and the request is served', async (ctx) => {
  const { jaeger, env, token } = subject(ctx);
  const svc = await serve(env);
  try {
    const listed = await fetch(`${svc.base}/plants`, {
      headers: { authorization: `Bearer ${token}`, traceparent: '00-not-a-trace-01', 'x-request-id': 'bad-parent' },
    });
    assert.is(listed.status, 200);
    const traceId = (await requestLine(svc.process, 'bad-parent'))['trace_id'];
    assert.type(traceId, 'string');
    const { trace } = await traceFrom(jaeger, traceId as string, 3);
    const server = trace.spans.find((s) => tag(s, 'span.kind') === 'server');
    assert.is(server?.operationName, 'GET /plants');
    assert.is(server && parentOf(server), undefined, 'a root span');
  } finally {
    await stop(svc.process);
  }
});

test("SIGTERM exports the last requests' spans before the exit", async (ctx) => {
  const { jaeger, env } = subject(ctx);
  // Batches every minute: only the shutdown's flush can export this span before the test reads it.
  const svc = await serve({ ...env, OTEL_BSP_SCHEDULE_DELAY: '60000' });
  let traceId: string;
  try {
    const response = await fetch(`${svc.base}/healthz`, { headers: { 'x-request-id': 'last-one' } });
    assert.is(response.status, 200);
    traceId = (await requestLine(svc.process, 'last-one'))['trace_id'] as string;
  } finally {
    await stop(svc.process);
  }
  assert.match(svc.process.stdout(), /"msg":"traces flushed"/);
  const { trace } = await traceFrom(jaeger, traceId, 1);
  assert.is(trace.spans[0]?.operationName, 'GET /healthz');
});

test("each process's spans carry OTEL_RESOURCE_ATTRIBUTES and a service.instance.id of their own", async (ctx) => {
  const { jaeger, env } = subject(ctx);
  const resource = { OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,service.namespace=shop%2Ceu' };
  const processes = await Promise.all([serve({ ...env, ...resource }), serve({ ...env, ...resource })]);
  const traces: string[] = [];
  try {
    for (const [i, svc] of processes.entries()) {
      const response = await fetch(`${svc.base}/healthz`, { headers: { 'x-request-id': `resource-${i}` } });
      assert.is(response.status, 200);
      traces.push((await requestLine(svc.process, `resource-${i}`))['trace_id'] as string);
    }
  } finally {
    await Promise.all(processes.map((svc) => stop(svc.process)));
  }
  const instances = [];
  for (const traceId of traces) {
    const { trace } = await traceFrom(jaeger, traceId, 1);
    const tags = trace.processes[trace.spans[0]?.processID ?? '']?.tags ?? [];
    const value = (key: string) => tags.find((t) => t.key === key)?.value;
    assert.is(value('deployment.environment.name'), 'staging');
    assert.is(value('service.namespace'), 'shop,eu', 'percent-decoded as the specification says');
    assert.is(trace.processes[trace.spans[0]?.processID ?? '']?.serviceName, 'plant-store');
    assert.match(
      String(value('service.instance.id')),
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    instances.push(value('service.instance.id'));
  }
  assert.is.not(instances[0], instances[1], 'one instance id per process');
});

run();
