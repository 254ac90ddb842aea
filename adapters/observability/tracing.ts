import {
  context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { subscribe } from 'node:diagnostics_channel';
import { ExportResultCode, W3CTraceContextPropagator, isTracingSuppressed } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  resourceFromAttributes,
  serviceInstanceIdDetector,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  ATTR_DB_COLLECTION_NAME,
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Logger } from '../../application/ports/logger.js';
import { redact } from './observed-backends.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { RateLimiter } from '../../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../../application/ports/token-verifier.js';

/**
 * Tracing with OpenTelemetry, where the service already observes: the server span of each request is started and
 * ended by the HTTP edge's pipeline (the `RequestTracer` shape of adapters/http/api/request-tracing.ts, which
 * bootstrap/ checks this fits), and a client span wraps each call of a port that reaches a backend (the decorators
 * below, as observed-backends.ts times them). No driver and no part of node:http is patched. This module is loaded
 * only when tracing is on (bootstrap/tracing.ts), so a service without it pays neither the SDK's loading nor any
 * per-request cost.
 *
 * What a span never carries: a token, a secret, a request or response body, an error's message (a driver's text can
 * name a URL with credentials); a failure is marked by its class (`error.type`) only.
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

export interface Tracing {
  readonly tracer: Tracer;
  readonly dropped: Readonly<DroppedSpans>;
  /** Whether the last export failed: the collector is away, and a last flush would only wait for its timeout. */
  readonly failing: () => boolean;
  /** Exports what is queued, then stops; resolves when done (bootstrap bounds the wait). */
  readonly shutdown: () => Promise<void>;
}

const samplerOf = (name: SamplerName, ratio: number): Sampler => {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
};

/**
 * The SDK's batch processor behind a count of its own: the batch processor drops a span silently when its queue is
 * full, so spans are counted in here (a sampled span handed on) and out when the exporter takes a batch (the batch
 * processor takes a batch off its queue and hands it to the exporter in one step), and a span that would pass the
 * bound is dropped here, counted. The exporter's failures (the collector refused or did not answer within
 * OTEL_EXPORTER_OTLP_TIMEOUT) are counted as dropped too: the SDK does not retry them.
 */
const countedBatches = (
  exporter: SpanExporter,
  maxQueueSize: number,
  dropped: DroppedSpans,
  exported: (ok: boolean, error: Error | undefined) => void,
): SpanProcessor => {
  let queued = 0;
  const counting: SpanExporter = {
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
  const batches = new BatchSpanProcessor(counting, { maxQueueSize, maxExportBatchSize: Math.min(512, maxQueueSize) });
  return {
    onStart: (span, parent) => batches.onStart(span, parent),
    onEnd: (span: ReadableSpan) => {
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return; // the batch processor ignores it too
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

/**
 * Starts the SDK: the provider, its sampler, the OTLP exporter behind a bounded batch, the async context. The resource
 * is the SDK's own (telemetry.sdk.*), the service's name and version, then what the SDK's detectors find, each over
 * the one before: the host, a
 * `service.instance.id` of this process, and OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME as the specification
 * reads them. A failing export is logged once, when exports start failing, and its end once, like a backend outage.
 */
export const startTracing = (options: TracingOptions): Tracing => {
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
  const provider = new BasicTracerProvider({
    resource: defaultResource()
      .merge(
        resourceFromAttributes({
          [ATTR_SERVICE_NAME]: options.serviceName,
          [ATTR_SERVICE_VERSION]: options.serviceVersion,
        }),
      )
      .merge(detectResources({ detectors: [hostDetector, serviceInstanceIdDetector, envDetector] })),
    sampler: samplerOf(options.sampler, options.ratio),
    // A path is the client's to choose: its attribute is cut, whatever Node's header limit allows.
    spanLimits: { attributeValueLengthLimit: 1024 },
    spanProcessors: [countedBatches(exporter, options.maxQueueSize, dropped, exported)],
  });
  // The context of each request follows its promises, so that a backend call's span finds the request's.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const tracer = provider.getTracer('plant-store', options.serviceVersion);
  traceFetches(tracer);
  return {
    tracer,
    dropped,
    failing: () => failing,
    shutdown: () => provider.shutdown(),
  };
};

interface UndiciRequest {
  readonly origin: string;
  readonly method: string;
  readonly path: string;
}

/**
 * A client span for each `fetch` made while a request's span is active: the JWKS fetch of `AUTH=jwt`, under the token
 * check's span (the only `fetch` of the service). From undici's diagnostics channels, which Node's `fetch` publishes
 * to: nothing is patched. The span ends when the response's headers arrive (a key set is a few hundred bytes). Its
 * URL is the origin and path only: no query, no user information.
 */
export const traceFetches = (tracer: Tracer): void => {
  const spans = new WeakMap<UndiciRequest, Span>();
  subscribe('undici:request:create', (message) => {
    const { request } = message as { request: UndiciRequest };
    const active = context.active();
    if (trace.getSpan(active) === undefined || isTracingSuppressed(active)) return;
    const url = new URL(request.path, request.origin);
    const method = KNOWN_METHODS.has(request.method) ? request.method : '_OTHER';
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      [ATTR_URL_FULL]: `${url.origin}${url.pathname}`,
      [ATTR_SERVER_ADDRESS]: url.hostname,
    };
    if (url.port !== '') attributes[ATTR_SERVER_PORT] = Number(url.port);
    spans.set(request, tracer.startSpan(method, { kind: SpanKind.CLIENT, attributes }, active));
  });
  subscribe('undici:request:headers', (message) => {
    const { request, response } = message as { request: UndiciRequest; response: { statusCode: number } };
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.statusCode);
    if (response.statusCode >= 400) {
      span.setAttribute(ATTR_ERROR_TYPE, String(response.statusCode));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  });
  subscribe('undici:request:error', (message) => {
    const { request, error } = message as { request: UndiciRequest; error: unknown };
    const span = spans.get(request);
    if (span === undefined) return;
    spans.delete(request);
    span.setAttribute(ATTR_ERROR_TYPE, errorClass(error));
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
};

/** HTTP methods semantic conventions name as they are; any other is `_OTHER`, with the method in its own attribute. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const propagator = new W3CTraceContextPropagator();

/** The server span of each request: the RequestTracer of adapters/http/api/request-tracing.ts. */
export const requestTracer = (tracer: Tracer) => ({
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
    const parent = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const raw = req.method ?? 'GET';
    const method = KNOWN_METHODS.has(raw) ? raw : '_OTHER';
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      [ATTR_URL_PATH]: req.path,
      [ATTR_URL_SCHEME]: 'http',
      [ATTR_NETWORK_PROTOCOL_VERSION]: req.httpVersion,
    };
    if (method === '_OTHER') attributes[ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = raw;
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parent);
    const { traceId, spanId } = span.spanContext();
    const end = (route: string, status: number): void => {
      // The template only (`DELETE /plants/{id}`): a plant id never names a span.
      const space = route.indexOf(' ');
      const template = space < 0 ? route : route.slice(space + 1);
      if (template !== 'unknown') {
        span.updateName(`${method} ${template}`);
        span.setAttribute(ATTR_HTTP_ROUTE, template);
      }
      if (status === 499) {
        // No response was sent: the client went away, or the shutdown's bound cut the request.
        span.setAttribute(ATTR_ERROR_TYPE, 'closed_before_answer');
      } else {
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
        if (status >= 500) {
          span.setAttribute(ATTR_ERROR_TYPE, String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
      }
      span.end();
    };
    return context.with(trace.setSpan(parent, span), handle, undefined, { traceId, spanId, end });
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

const errorClass = (e: unknown): string =>
  e instanceof Error ? e.constructor.name || 'Error' : typeof e === 'object' && e !== null ? 'object' : typeof e;

const leftClass = (left: unknown): string =>
  typeof left === 'object' && left !== null && typeof (left as { _tag?: unknown })._tag === 'string'
    ? (left as { _tag: string })._tag
    : 'unavailable';

/**
 * One client span around one call of a port, a child of the span active when the call runs (the request's). A Left
 * is the port's refusal (a backend unavailable or too slow, storage full): marked by its `_tag`. A thrown error is
 * marked by its class, and thrown on.
 */
const traced = <E, A>(
  tracer: Tracer,
  spans: BackendSpans,
  operation: string,
  task: TaskEither<E, A>,
): TaskEither<E, A> => {
  const name = spans.collection === undefined ? `${spans.backend} ${operation}` : `${operation} ${spans.collection}`;
  const attributes: Attributes = { 'plantstore.backend': spans.backend, 'plantstore.operation': operation };
  if (spans.dbSystem !== undefined) {
    attributes[ATTR_DB_SYSTEM_NAME] = spans.dbSystem;
    attributes[ATTR_DB_OPERATION_NAME] = operation;
  }
  if (spans.dbNamespace !== undefined) attributes[ATTR_DB_NAMESPACE] = spans.dbNamespace;
  if (spans.collection !== undefined) attributes[ATTR_DB_COLLECTION_NAME] = spans.collection;
  return async () => {
    const active: Context = context.active();
    // A call made for no request (a background check) starts no trace of its own.
    if (trace.getSpan(active) === undefined) return task();
    const span: Span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, active);
    let result;
    try {
      result = await context.with(trace.setSpan(active, span), task);
    } catch (e) {
      span.setAttribute(ATTR_ERROR_TYPE, errorClass(e));
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw e;
    }
    if (result._tag === 'Left') {
      span.setAttribute(ATTR_ERROR_TYPE, leftClass(result.left));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
    return result;
  };
};

export const tracedPlants = (plants: PlantRepository, tracer: Tracer, spans: BackendSpans): PlantRepository => ({
  insert: (owner, plant, maxPlants) => traced(tracer, spans, 'insert', plants.insert(owner, plant, maxPlants)),
  page: (owner, after, limit) => traced(tracer, spans, 'page', plants.page(owner, after, limit)),
  remove: (owner, id) => traced(tracer, spans, 'remove', plants.remove(owner, id)),
  ping: traced(tracer, spans, 'ping', plants.ping),
});

/** The token check (a Redis look-up, a JWT's signature, its key set's fetch); the token is never an attribute. */
export const tracedTokens = (tokens: TokenVerifier, tracer: Tracer, spans: BackendSpans): TokenVerifier => ({
  verify: (token, rejected) => traced(tracer, spans, 'verify', tokens.verify(token, rejected)),
  ping: traced(tracer, spans, 'ping', tokens.ping),
});

export const tracedLimiter = (limiter: RateLimiter, tracer: Tracer, spans: BackendSpans): RateLimiter => ({
  consume: (key) => traced(tracer, spans, 'consume', limiter.consume(key)),
});
