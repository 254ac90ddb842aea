import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import type { CorsPolicy } from './cors.js';
import { edgeOf } from './exchange.js';

/** A failure as it goes over the wire (api/respond.ts's and server.ts's): status, Error message, header fields. */
export interface FailureResponse {
  readonly status: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** A refusal below the routes (server.ts): it closes the connection. */
export const CLOSE = { Connection: 'close' } as const;
export const refusal = (status: number, message: string): FailureResponse => ({ status, message, headers: CLOSE });
export const malformed = (reason: string): FailureResponse => refusal(400, `request: ${reason}`);
export const VERSION_NOT_SUPPORTED = refusal(505, 'request: only HTTP/1.0 and HTTP/1.1 are served');

/** What the answers of one server share. */
export interface Edge {
  readonly logger: Logger;
  readonly cors?: CorsPolicy | undefined;
}

/** The request an answer is for: its id, and its Origin (for CORS). */
export interface Asker {
  readonly id: string;
  readonly origin: string | undefined;
}

/** The request's log line: the route and time when a route took it, or the server's code for a refusal. */
export interface RequestLine {
  readonly reqId: string;
  readonly method: string | undefined;
  readonly status: number;
  readonly route?: string | undefined;
  readonly ms?: number | undefined;
  readonly owner?: string | undefined;
  /** Why a token was refused (401, 403), never the token. */
  readonly rejected?: string | undefined;
  readonly code?: string | undefined;
  /** The status a request closed before its answer (499) would have had. */
  readonly answer?: number | undefined;
  readonly trace_id?: string | undefined;
  readonly span_id?: string | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The request's one log line. */
export const logRequest = (logger: Logger, line: RequestLine): void => logger.info(line, 'request');

/** Every response's fields as one flat `[name, value, ...]` list for one writeHead. */
export const responseFields = (
  { cors }: Edge,
  asker: Asker,
  headers: Readonly<Record<string, string>> | undefined,
  body: string | Buffer | undefined,
): string[] => {
  const fields: string[] = ['X-Request-Id', asker.id, 'X-Content-Type-Options', 'nosniff'];
  if (headers?.['Cache-Control'] === undefined) fields.push('Cache-Control', 'no-store');
  if (cors !== undefined) cors.addResponseFields(asker.origin, fields);
  if (headers !== undefined) for (const name in headers) fields.push(name, headers[name] as string);
  if (body !== undefined) {
    if (headers?.['Content-Type'] === undefined) fields.push('Content-Type', JSON_TYPE);
    fields.push('Content-Length', String(Buffer.byteLength(body)));
  }
  return fields;
};

/** Every failure's answer in the Error shape, on the response or framed on the bare socket; then its log line. */
export const answerFailure = (
  edge: Edge,
  to: ServerResponse | Socket,
  asker: Asker,
  { status, message, headers }: FailureResponse,
  line: Omit<RequestLine, 'reqId' | 'status'>,
): number => {
  const body = JSON.stringify({ error: status, message });
  const fields = responseFields(edge, asker, headers, body);
  if (!('writeHead' in to)) frame(to, status, fields, body);
  else {
    to.writeHead(status, fields);
    const closing = headers?.['Connection'] === 'close';
    const server = closing && bodyMayFollow(to.req) ? edgeOf(to.req) : undefined;
    // The body may still be coming: closed now, the connection would be reset as more arrives, taking the answer.
    if (server !== undefined) server.endAfterBody(to, body);
    else to.end(body);
  }
  logRequest(edge.logger, { reqId: asker.id, ...line, status });
  return status;
};

/** Whether the request's body may still be on its way. */
const bodyMayFollow = ({ complete, headers }: IncomingMessage): boolean =>
  !complete && (headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0');

/** Writes a whole HTTP/1.1 response on a bare socket: the status line, Date, the given fields and the body. */
const frame = (socket: Socket, status: number, fields: readonly string[], body: string): void => {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nDate: ${new Date().toUTCString()}\r\n`;
  for (let i = 0; i < fields.length; i += 2) head += `${fields[i]}: ${fields[i + 1]}\r\n`;
  socket.write(`${head}\r\n${body}`);
};
