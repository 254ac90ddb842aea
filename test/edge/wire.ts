import { connect, type Socket } from 'node:net';
import * as assert from 'uvu/assert';

/** One HTTP/1.1 response as it came over the wire. */
export interface WireResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A raw client connection, for what fetch will not send: bytes are written as given, responses parsed as they come. */
export interface Wire {
  readonly socket: Socket;
  readonly write: (data: string | Buffer) => boolean;
  /** Every complete response received so far, interim (1xx) ones included. */
  readonly responses: () => WireResponse[];
  /** Resolves with the `n`th complete response (1-based); rejects after `timeoutMs` or when the connection ends first. */
  readonly response: (n?: number, timeoutMs?: number) => Promise<WireResponse>;
  /** Resolves once the server has closed the connection (end of stream or reset); rejects after `timeoutMs`. */
  readonly closed: (timeoutMs?: number) => Promise<void>;
  readonly isClosed: () => boolean;
  readonly destroy: () => void;
}

const noBody = (status: number) => (status >= 100 && status < 200) || status === 204 || status === 304;

/** Parses as many complete responses as `data` holds (Content-Length or chunked bodies). */
export const parseResponses = (data: Buffer): WireResponse[] => {
  const out: WireResponse[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at, 'latin1');
    if (end < 0) return out;
    const [statusLine = '', ...lines] = data.subarray(at, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const status = Number(statusLine.split(' ')[1]);
    let bodyStart = end + 4;
    let body: Buffer = Buffer.alloc(0);
    if (!noBody(status) && headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = data.indexOf('\r\n', bodyStart, 'latin1');
        if (lineEnd < 0) return out;
        const size = parseInt(data.subarray(bodyStart, lineEnd).toString('latin1'), 16);
        if (data.length < lineEnd + 2 + size + 2) return out;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyStart = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else if (!noBody(status)) {
      const length = Number(headers['content-length'] ?? 0);
      if (data.length < bodyStart + length) return out;
      body = data.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    }
    out.push({ status, headers, body: body.toString('utf8') });
    at = bodyStart;
  }
};

export const openWire = (port: number): Promise<Wire> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let ended = false;
    const waiters = new Set<() => void>();
    const wake = () => {
      for (const w of [...waiters]) w();
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      wake();
    });
    const end = () => {
      ended = true;
      wake();
    };
    socket.on('end', end).on('close', end).on('error', end);
    socket.once('error', reject);
    const until = <T>(check: () => T | undefined, timeoutMs: number, what: string) =>
      new Promise<T>((done, fail) => {
        const attempt = () => {
          const value = check();
          if (value !== undefined) {
            clearTimeout(timer);
            waiters.delete(attempt);
            done(value);
          } else if (ended && what !== 'close') {
            clearTimeout(timer);
            waiters.delete(attempt);
            fail(new Error(`connection ended before ${what}; received: ${data.toString('latin1').slice(0, 300)}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(attempt);
          fail(new Error(`no ${what} within ${timeoutMs} ms; received: ${data.toString('latin1').slice(0, 300)}`));
        }, timeoutMs);
        waiters.add(attempt);
        attempt();
      });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve({
        socket,
        write: (chunk) => socket.write(chunk),
        responses: () => parseResponses(data),
        response: (n = 1, timeoutMs = 5000) => until(() => parseResponses(data)[n - 1], timeoutMs, `response ${n}`),
        closed: (timeoutMs = 5000) => until(() => (ended ? true : undefined), timeoutMs, 'close').then(() => undefined),
        isClosed: () => ended,
        destroy: () => socket.destroy(),
      });
    });
  });

/** Sends `request` on a new connection and reads its first response. */
export const exchange = async (port: number, request: string | Buffer, timeoutMs = 5000): Promise<WireResponse> => {
  const wire = await openWire(port);
  try {
    wire.write(request);
    return await wire.response(1, timeoutMs);
  } finally {
    wire.destroy();
  }
};

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The contract's failure shape: the status, `{"error": status, "message": "..."}` and nothing else, JSON content
 * type, X-Request-Id, no-store, nosniff, and (for failures found below the app) `Connection: close`; `closes: 'after'`
 * for an answer given while the request's body was still arriving, which goes without the field (Node would reset the
 * connection under a client still sending) and is followed by a graceful close (the caller checks it).
 */
export const assertContractFailure = (
  res: WireResponse,
  status: number,
  { closes = true }: { closes?: boolean | 'after' } = {},
): void => {
  assert.is(res.status, status, `status (body: ${res.body})`);
  assert.is(res.headers['content-type'], 'application/json; charset=utf-8', 'content-type');
  assert.ok(REQUEST_ID.test(res.headers['x-request-id'] ?? ''), 'x-request-id');
  assert.is(res.headers['cache-control'], 'no-store', 'cache-control');
  assert.is(res.headers['x-content-type-options'], 'nosniff', 'x-content-type-options');
  if (closes === true) assert.is(res.headers['connection']?.toLowerCase(), 'close', 'connection');
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.equal(Object.keys(body).sort(), ['error', 'message']);
  assert.is(body['error'], status);
  assert.type(body['message'], 'string');
  assert.ok((body['message'] as string).length > 0);
};

/** The one log line of the response with this X-Request-Id. */
export const logLineOf = (logs: ReadonlyArray<Record<string, unknown>>, res: WireResponse) => {
  const lines = logs.filter((l) => l['reqId'] === res.headers['x-request-id']);
  assert.is(lines.length, 1, `one log line for request ${res.headers['x-request-id']}`);
  const line = lines[0] as Record<string, unknown>;
  assert.is(line['status'], res.status);
  return line;
};
