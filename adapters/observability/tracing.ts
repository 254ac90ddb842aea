import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { subscribe } from 'node:diagnostics_channel';
import { ExportResultCode, W3CTraceContextPropagator, isTracingSuppressed } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import * as resources from '@opentelemetry/resources';
import * as sdk from '@opentelemetry/sdk-trace-base';
import * as semconv from '@opentelemetry/semantic-conventions';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import { redact } from '../../application/fail-fast/breakers.js';
import type { Logger } from '../../application/ports/logger.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../../application/ports/token-verifier.js';

/**
 * OpenTelemetry: a server span per request and a client span per backend call, nothing patched; loaded only when
 * tracing is on. A span never carries a token, a secret, a body or an error's message: a failure is marked by class.
 */

/** The samplers OTEL_TRACES_SAMPLER names (the OpenTelemetry specification's list, less the vendor ones). */
export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

export interface TracingOptions {
  /** The OTLP/HTTP (protobuf) traces endpoint, the whole URL (`http://collector:4318/v1/traces`). */
  readonly url: string;
  readonly serviceName: string;
  readonly serviceVersion: string;
  readonly sampler: SamplerName;
  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  readonly ratio: number;
  /** Spans waiting for export at most; an ended span beyond it is dropped and counted. */
  readonly maxQueueSize: number;
  /** Where a failing export is said, once per outage of the collector, and its end. */
  readonly logger: Logger;
}

/** Spans dropped, by why: the queue was full (the collector is slow or away), or their export failed. */
export interface DroppedSpans {
  queueFull: number;
  exportFailed: number;
}

const samplerOf = (name: SamplerName, ratio: number): sdk.Sampler => {
  const root = name.endsWith('always_on')
    ? new sdk.AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new sdk.AlwaysOffSampler()
      : new sdk.TraceIdRatioBasedSampler(ratio);
  return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
};

/**
 * The SDK's batch processor drops a span silently when its queue is full, so spans are counted here, in when handed
 * on and out when the exporter takes a batch, and one past the bound is dropped here, counted. A failed export
 * (refused, or no answer within OTEL_EXPORTER_OTLP_TIMEOUT) is counted as dropped too: the SDK does not retry it.
 */
const countedBatches = (
  exporter: sdk.SpanExporter,
  maxQueueSize: number,
  dropped: DroppedSpans,
  exported: (ok: boolean, error: Error | undefined) => void,
): sdk.SpanProcessor => {
  let queued = 0;
  const counting: sdk.SpanExporter = {
    export: (spans, done) => {
      queued -= spans.length;
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) dropped.exportFailed += spans.length;
        exported(result.code === ExportResultCode.SUCCESS, result.error);
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    ...(exporter.forceFlush === undefined ? {} : { forceFlush: () => (exporter.forceFlush as () => Promise<void>)() }),
  };
  // The batch processor's own bound is never the one reached: this one is checked first.
  const batches = new sdk.BatchSpanProcessor(counting, {
    maxQueueSize,
    maxExportBatchSize: Math.min(512, maxQueueSize),
  });
  return {
    onStart: (span, parent) => batches.onStart(span, parent),
    onEnd: (span: sdk.ReadableSpan) => {
      if ((span.spanContext().traceFlags & api.TraceFlags.SAMPLED) === 0) return; // the batch processor ignores it too
      if (queued >= maxQueueSize) {
        dropped.queueFull += 1;
        return;
      }
      queued += 1;
      batches.onEnd(span);
    },
    forceFlush: () => batches.forceFlush(),
    shutdown: () => batches.shutdown(),
  };
};

/** Starts the SDK (resource: the SDK's, the service's, the detectors'); export failures are logged like an outage. */
export const startTracing = (options: TracingOptions) => {
  const dropped: DroppedSpans = { queueFull: 0, exportFailed: 0 };
  let failing = false;
  const exported = (ok: boolean, error: Error | undefined) => {
    if (ok === !failing) return;
    failing = !ok;
    if (ok) options.logger.info({ backend: 'trace collector' }, 'trace collector recovered');
    else {
      // The exporter's message may name the collector's URL: user information in it is masked.
      const reason = redact(error?.message ?? 'export failed');
      options.logger.warn({ backend: 'trace collector', reason }, 'trace collector unavailable: spans are dropped');
    }
  };
  const exporter = new OTLPTraceExporter({ url: options.url });
  const provider = new sdk.BasicTracerProvider({
    resource: resources
      .defaultResource()
      .merge(
        resources.resourceFromAttributes({
          [semconv.ATTR_SERVICE_NAME]: options.serviceName,
          [semconv.ATTR_SERVICE_VERSION]: options.serviceVersion,
        }),
      )
      .merge(
        resources.detectResources({
          detectors: [resources.hostDetector, resources.serviceInstanceIdDetector, resources.envDetector],
        }),
      ),
    sampler: samplerOf(options.sampler, options.ratio),
    // A path is the client's to choose: its attribute is cut, whatever Node's header limit allows.
    spanLimits: { attributeValueLengthLimit: 1024 },
    spanProcessors: [countedBatches(exporter, options.maxQueueSize, dropped, exported)],
  });
  // The context of each request follows its promises, so that a backend call's span finds the request's.
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const tracer = provider.getTracer('plant-store', options.serviceVersion);
  traceFetches(tracer);
  // `failing`: the collector is away, and a last flush would only wait for its timeout.
  return { tracer, dropped, failing: () => failing, shutdown: () => provider.shutdown() };
};

interface UndiciRequest {
  readonly origin: string;
  readonly method: string;
  readonly path: string;
}

/** A client span for each `fetch` under a request's span (the JWKS fetch); its URL has no query, no credentials. */
export const traceFetches = (tracer: api.Tracer): void => {
  const spans = new WeakMap<UndiciRequest, api.Span>();
  subscribe('undici:request:create', (message) => {
    const { request } = message as { request: UndiciRequest };
    const active = api.context.active();
    if (api.trace.getSpan(active) === undefined || isTracingSuppressed(active)) return;
    const url = new URL(request.path, request.origin);
    const method = KNOWN_METHODS.has(request.method) ? request.method : '_OTHER';
    const attributes: api.Attributes = {
      [semconv.ATTR_HTTP_REQUEST_METHOD]: method,
      [semconv.ATTR_URL_FULL]: `${url.origin}${url.pathname}`,
      [semconv.ATTR_SERVER_ADDRESS]: url.hostname,
    };
    if (url.port !== '') attributes[semconv.ATTR_SERVER_PORT] = Number(url.port);
    spans.set(request, tracer.startSpan(method, { kind: api.SpanKind.CLIENT, attributes }, active));
  });
  subscribe('undici:request:headers', (message) => {
    const { request, response } = message as { request: UndiciRequest; response: { statusCode: number } };
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    span.setAttribute(semconv.ATTR_HTTP_RESPONSE_STATUS_CODE, response.statusCode);
    if (response.statusCode >= 400) failed(span, String(response.statusCode));
    span.end();
  });
  subscribe('undici:request:error', (message) => {
    const { request, error } = message as { request: UndiciRequest; error: unknown };
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    failed(span, errorClass(error));
    span.end();
  });
};

/** HTTP methods semantic conventions name as they are; any other is `_OTHER`, with the method in its own attribute. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const propagator = new W3CTraceContextPropagator();

/** The server span of each request: the RequestTracer of adapters/http/api/request-tracing.ts. */
export const requestTracer = (tracer: api.Tracer) => ({
  serve: <T>(
    req: {
      readonly method?: string | undefined;
      readonly path: string;
      readonly headers: Record<string, string | string[] | undefined>;
      readonly httpVersion: string;
    },
    handle: (trace: {
      readonly traceId: string;
      readonly spanId: string;
      readonly end: (route: string, status: number) => void;
    }) => T,
  ): T => {
    // An invalid or absent traceparent (or one sent twice, which Node joins into one invalid value) yields no
    // parent: the request starts a trace of its own, and nothing is refused for it.
    const parent = propagator.extract(api.ROOT_CONTEXT, req.headers, api.defaultTextMapGetter);
    const raw = req.method ?? 'GET';
    const method = KNOWN_METHODS.has(raw) ? raw : '_OTHER';
    const attributes: api.Attributes = {
      [semconv.ATTR_HTTP_REQUEST_METHOD]: method,
      [semconv.ATTR_URL_PATH]: req.path,
      [semconv.ATTR_URL_SCHEME]: 'http',
      [semconv.ATTR_NETWORK_PROTOCOL_VERSION]: req.httpVersion,
    };
    if (method === '_OTHER') attributes[semconv.ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = raw;
    const span = tracer.startSpan(method, { kind: api.SpanKind.SERVER, attributes }, parent);
    const { traceId, spanId } = span.spanContext();
    const end = (route: string, status: number): void => {
      // The template only (`DELETE /plants/{id}`): a plant id never names a span.
      const space = route.indexOf(' ');
      const template = space < 0 ? route : route.slice(space + 1);
      if (template !== 'unknown') {
        span.updateName(`${method} ${template}`);
        span.setAttribute(semconv.ATTR_HTTP_ROUTE, template);
      }
      if (status === 499) {
        // No response was sent: the client went away, or the shutdown's bound cut the request.
        span.setAttribute(semconv.ATTR_ERROR_TYPE, 'closed_before_answer');
      } else {
        span.setAttribute(semconv.ATTR_HTTP_RESPONSE_STATUS_CODE, status);
        if (status >= 500) failed(span, String(status));
      }
      span.end();
    };
    return api.context.with(api.trace.setSpan(parent, span), handle, undefined, { traceId, spanId, end });
  },
});

/** What names a backend's spans and what they carry: `db.*` for a database, the port's own names otherwise. */
export interface BackendSpans {
  /** `storage`, `token store`, `rate limiter`: the `plantstore.backend` attribute and the first word of span names. */
  readonly backend: string;
  /** `mongodb`, `redis`; none for one held in the process (memory storage, static tokens, JWT keys). */
  readonly dbSystem?: string;
  readonly dbNamespace?: string;
  readonly collection?: string;
}

const failed = (span: api.Span, type: string): void => {
  span.setAttribute(semconv.ATTR_ERROR_TYPE, type);
  span.setStatus({ code: api.SpanStatusCode.ERROR });
};

const errorClass = (e: unknown): string =>
  e instanceof Error ? e.constructor.name || 'Error' : typeof e === 'object' && e !== null ? 'object' : typeof e;

const leftClass = (left: unknown): string =>
  typeof left === 'object' && left !== null && typeof (left as { _tag?: unknown })._tag === 'string'
    ? (left as { _tag: string })._tag
    : 'unavailable';

/** A client span around one call of a port, under the request's span: a Left is marked by its `_tag`, a throw by its class. */
const traced = <E, A>(
  tracer: api.Tracer,
  spans: BackendSpans,
  operation: string,
  task: TaskEither<E, A>,
): TaskEither<E, A> => {
  const name = spans.collection === undefined ? `${spans.backend} ${operation}` : `${operation} ${spans.collection}`;
  const attributes: api.Attributes = { 'plantstore.backend': spans.backend, 'plantstore.operation': operation };
  if (spans.dbSystem !== undefined) {
    attributes[semconv.ATTR_DB_SYSTEM_NAME] = spans.dbSystem;
    attributes[semconv.ATTR_DB_OPERATION_NAME] = operation;
  }
  if (spans.dbNamespace !== undefined) attributes[semconv.ATTR_DB_NAMESPACE] = spans.dbNamespace;
  if (spans.collection !== undefined) attributes[semconv.ATTR_DB_COLLECTION_NAME] = spans.collection;
  return async () => {
    const active: api.Context = api.context.active();
    // A call made for no request (a background check) starts no trace of its own.
    if (api.trace.getSpan(active) === undefined) return task();
    const span: api.Span = tracer.startSpan(name, { kind: api.SpanKind.CLIENT, attributes }, active);
    let result;
    try {
      result = await api.context.with(api.trace.setSpan(active, span), task);
    } catch (e) {
      failed(span, errorClass(e));
      span.end();
      throw e;
    }
    if (result._tag === 'Left') failed(span, leftClass(result.left));
    span.end();
    return result;
  };
};

export const tracedPlants = (plants: PlantRepository, tracer: api.Tracer, spans: BackendSpans): PlantRepository => ({
  insert: (owner, plant, maxPlants) => traced(tracer, spans, 'insert', plants.insert(owner, plant, maxPlants)),
  page: (owner, after, limit) => traced(tracer, spans, 'page', plants.page(owner, after, limit)),
  remove: (owner, id) => traced(tracer, spans, 'remove', plants.remove(owner, id)),
  ping: traced(tracer, spans, 'ping', plants.ping),
});

/** The token check (a Redis look-up, a JWT's signature, its key set's fetch); the token is never an attribute. */
export const tracedTokens = (tokens: TokenVerifier, tracer: api.Tracer, spans: BackendSpans): TokenVerifier => ({
  verify: (token, rejected) => traced(tracer, spans, 'verify', tokens.verify(token, rejected)),
  ping: traced(tracer, spans, 'ping', tokens.ping),
});

export const tracedLimiter = (limiter: RateLimiter, tracer: api.Tracer, spans: BackendSpans): RateLimiter => ({
  consume: (key) => traced(tracer, spans, 'consume', limiter.consume(key)),
});
