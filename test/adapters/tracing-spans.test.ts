import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as E from 'fp-ts/lib/Either.js';
import * as TE from 'fp-ts/lib/TaskEither.js';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { storageUnavailable } from '../../application/errors.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import { requestTracer, traceFetches, tracedPlants } from '../../adapters/observability/tracing.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { Owner, PlantId } from '../../domain/plant.js';

/**
 * The spans tracing makes, read from the SDK's own in-memory exporter: the server span's name and attributes, and the
 * backend spans' parent and error marks. (The same spans through a real collector: tracing-jaeger.test.ts.)
 */
const test = suite('tracing: span names, attributes and error marks');

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracer = provider.getTracer('test');
const requests = requestTracer(tracer);
traceFetches(tracer);
const owner = E.getOrElseW(() => {
  throw new Error('owner');
})(Owner.from('acme'));
const id = E.getOrElseW(() => {
  throw new Error('id');
})(PlantId.fromBigInt('id', 7n));

test.before.each(() => exporter.reset());

const request = (method: string, path: string, headers: Record<string, string> = {}) => ({
  method,
  path,
  headers,
  httpVersion: '1.1',
});
const byName = (name: string): ReadableSpan => {
  const span = exporter.getFinishedSpans().find((s) => s.name === name);
  assert.ok(
    span !== undefined,
    `a span named ${name}: ${exporter
      .getFinishedSpans()
      .map((s) => s.name)
      .join(', ')}`,
  );
  return span;
};

test('a request span is named by method and route template, never by the id in its path', async () => {
  const plants = tracedPlants(memoryPlantRepository(), tracer, { backend: 'storage' });
  await requests.serve(request('DELETE', '/plants/7'), async (t) => {
    await plants.remove(owner, id)();
    t.end('DELETE /plants/{id}', 404);
  });
  const server = byName('DELETE /plants/{id}');
  assert.equal(server.attributes['http.route'], '/plants/{id}');
  assert.equal(server.attributes['http.request.method'], 'DELETE');
  assert.equal(server.attributes['http.response.status_code'], 404);
  assert.is(server.status.code, SpanStatusCode.UNSET, 'a 4xx is not a server error');
  assert.ok(exporter.getFinishedSpans().every((s) => !s.name.includes('7')));
  const storage = byName('storage remove');
  assert.is(storage.parentSpanContext?.spanId, server.spanContext().spanId);
});

test('a 5xx marks the request span as an error, with the status as error.type', () => {
  requests.serve(request('GET', '/readyz'), (t) => t.end('GET /readyz', 503));
  const server = byName('GET /readyz');
  assert.is(server.status.code, SpanStatusCode.ERROR);
  assert.is(server.attributes['error.type'], '503');
});

test('a thrown error marks the backend span with its class, and its message appears nowhere', async () => {
  class DriverError extends Error {}
  const failing: PlantRepository = {
    ...memoryPlantRepository(),
    page: () => () => Promise.reject(new DriverError('connect to mongodb://user:hunter2@db failed')),
  };
  const plants = tracedPlants(failing, tracer, { backend: 'storage', dbSystem: 'mongodb', collection: 'plants' });
  await requests.serve(request('GET', '/plants'), async (t) => {
    await plants
      .page(owner, undefined, 10)()
      .catch(() => undefined);
    t.end('GET /plants', 500);
  });
  const storage = byName('page plants');
  assert.is(storage.attributes['error.type'], 'DriverError');
  assert.is(storage.status.code, SpanStatusCode.ERROR);
  assert.is(storage.status.message, undefined);
  assert.equal(storage.events, []);
  assert.not.ok(JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.events])).includes('hunter2'));
});

test("a backend's refusal (a Left) marks its span with the refusal's tag", async () => {
  const plants = tracedPlants({ ...memoryPlantRepository(), page: () => TE.left(storageUnavailable) }, tracer, {
    backend: 'storage',
  });
  await requests.serve(request('GET', '/plants'), async (t) => {
    await plants.page(owner, undefined, 10)();
    t.end('GET /plants', 503);
  });
  assert.is(byName('storage page').attributes['error.type'], 'StorageUnavailable');
});

test('a backend call made for no request (a background check) makes no span', async () => {
  const plants = tracedPlants(memoryPlantRepository(), tracer, { backend: 'storage' });
  assert.is(trace.getSpan(context.active()), undefined);
  await plants.ping();
  assert.equal(exporter.getFinishedSpans(), []);
});

test("a valid traceparent makes the request span the caller's child; an invalid one starts a new trace", () => {
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  requests.serve(request('GET', '/healthz', { traceparent: `00-${traceId}-b7ad6b7169203331-01` }), (t) =>
    t.end('GET /healthz', 200),
  );
  const child = byName('GET /healthz');
  assert.is(child.spanContext().traceId, traceId);
  assert.is(child.parentSpanContext?.spanId, 'b7ad6b7169203331');
  exporter.reset();
  requests.serve(request('GET', '/healthz', { traceparent: `00-${traceId}-b7ad6b7169203331-zz` }), (t) =>
    t.end('GET /healthz', 200),
  );
  const root = byName('GET /healthz');
  assert.is.not(root.spanContext().traceId, traceId);
  assert.is(root.parentSpanContext, undefined);
});

test("a fetch made for a request (the JWKS fetch) is a client span under the caller's, its URL without the query", async () => {
  const keys = createServer((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}'));
  await new Promise<void>((resolve) => keys.listen(0, '127.0.0.1', resolve));
  const { port } = keys.address() as AddressInfo;
  try {
    await fetch(`http://127.0.0.1:${port}/outside-any-request`);
    await requests.serve(request('GET', '/plants'), async (t) => {
      await (await fetch(`http://127.0.0.1:${port}/jwks.json?secret=s3cr3t`)).json();
      t.end('GET /plants', 200);
    });
  } finally {
    keys.close();
  }
  const server = byName('GET /plants');
  const client = byName('GET');
  assert.is(client.parentSpanContext?.spanId, server.spanContext().spanId);
  assert.is(client.attributes['url.full'], `http://127.0.0.1:${port}/jwks.json`);
  assert.is(client.attributes['http.response.status_code'], 200);
  assert.is(exporter.getFinishedSpans().length, 2, 'the fetch outside a request made no span');
});

test.run();
