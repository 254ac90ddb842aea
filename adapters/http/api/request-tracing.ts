import type { IncomingHttpHeaders } from 'node:http';

/** A request's server span as the edge sees it (made by adapters/observability/tracing.ts): its ids and its end. */
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
  /** Starts the request's span (under the caller's valid `traceparent`) and runs `handle` in its context. */
  readonly serve: <T>(req: TracedRequest, handle: (trace: RequestTrace) => T) => T;
}
