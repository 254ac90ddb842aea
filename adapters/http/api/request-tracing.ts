import type { IncomingHttpHeaders } from 'node:http';

/**
 * The server span of one request as the HTTP edge sees it: ids for the request's log line, and its end. Made by
 * adapters/observability/tracing.ts (OpenTelemetry); the edge imports no tracing library.
 */
export interface RequestTrace {
  readonly traceId: string;
  readonly spanId: string;
  /** Ends the span with the route template (`DELETE /plants/{id}`, `unknown`) and the status sent (499: none sent). */
  readonly end: (route: string, status: number) => void;
}

/** What a request carries into its span: its method, path and headers (`traceparent`, `tracestate`). */
export interface TracedRequest {
  readonly method?: string | undefined;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly httpVersion: string;
}

export interface RequestTracer {
  /**
   * Starts the request's server span (continuing the caller's trace when its `traceparent` is valid, a new trace
   * otherwise) and runs `handle` in its context, so that the backend calls made for the request are its children.
   */
  readonly serve: <T>(req: TracedRequest, handle: (trace: RequestTrace) => T) => T;
}
