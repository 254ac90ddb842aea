import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../../../application/ports/logger.js';
import type { CorsPolicy } from './cors.js';
import { edgeOf } from './exchange.js';

/**
 * How every response of the service is answered and logged: the fields the contract puts on each (X-Request-Id,
 * no-store, nosniff, CORS, Content-Type and Content-Length), the Error body of a failure, and the one log line. The
 * app's responder (api/respond.ts) and the server's own refusals (server.ts) both answer through here.
 */

/** A failure as it goes over the wire: the status, the Error body's message, and header fields. */
export interface FailureResponse {
  readonly status: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** What the answers of one server share: its log and its CORS policy (none when CORS is off). */
export interface Edge {
  readonly logger: Logger;
  readonly cors?: CorsPolicy | undefined;
}

/** The request an answer is for: its id (for the field and the log line), and its Origin (for CORS). */
export interface Asker {
  readonly id: string;
  readonly origin: string | undefined;
}

/**
 * The request's log line: its id, method and status, and the route and time when a route took it, or the server's
 * code for a refusal below the routes. pino leaves out a member whose value is undefined.
 */
export interface RequestLine {
  readonly reqId: string;
  readonly method: string | undefined;
  readonly status: number;
  readonly route?: string | undefined;
  readonly ms?: number | undefined;
  readonly owner?: string | undefined;
  /** Why a token was refused (401, 403): never the token. */
  readonly rejected?: string | undefined;
  readonly code?: string | undefined;
  /** The status a request closed before its answer would have had (logged with status 499). */
  readonly answer?: number | undefined;
  /** The request's trace and server span, when tracing is on. */
  readonly trace_id?: string | undefined;
  readonly span_id?: string | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The request's one log line. */
export const logRequest = (logger: Logger, line: RequestLine): void => logger.info(line, 'request');

/**
 * The fields of every response, as one flat `[name, value, ...]` list for one writeHead (cheaper than a setHeader per
 * field): the request id, nosniff, no-store (unless `headers` gives a Cache-Control), CORS, `headers`, and for a body
 * its Content-Type (JSON unless given) and Content-Length.
 */
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

/**
 * Every failure's answer, the app's and the server's alike: the failure's status, the contract's fields and the
 * Error body, written on the response, or framed on the bare socket where Node has no response object; then its log
 * line. Returns the status.
 */
export const answerFailure = (
  edge: Edge,
  to: ServerResponse | Socket,
  asker: Asker,
  { status, message, headers }: FailureResponse,
  line: Omit<RequestLine, 'reqId' | 'status'>,
): number => {
  const body = JSON.stringify({ error: status, message });
  let fields = headers;
  if ('writeHead' in to && headers?.['Connection'] === 'close' && bodyMayFollow(to.req)) {
    // The client may still be sending the body: on `Connection: close` Node closes the socket right after the answer,
    // and the kernel resets it as more arrives, taking the answer with it. So the answer goes without the field, and
    // the connection is closed gracefully after it (a FIN, the rest of the body read and dropped, bounded).
    const { Connection: _close, ...kept } = headers;
    fields = kept;
    edgeOf(to.socket)?.closeAfter(to);
  }
  if ('writeHead' in to) to.writeHead(status, responseFields(edge, asker, fields, body)).end(body);
  else frame(to, status, responseFields(edge, asker, fields, body), body);
  logRequest(edge.logger, { reqId: asker.id, ...line, status });
  return status;
};

/** Whether the request's body may still be on its way. */
const bodyMayFollow = (req: IncomingMessage): boolean => {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
};

/** Writes a whole HTTP/1.1 response on a bare socket: the status line, Date, the given fields and the body. */
const frame = (socket: Socket, status: number, fields: readonly string[], body: string): void => {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nDate: ${new Date().toUTCString()}\r\n`;
  for (let i = 0; i < fields.length; i += 2) head += `${fields[i]}: ${fields[i + 1]}\r\n`;
  socket.write(`${head}\r\n${body}`);
};
