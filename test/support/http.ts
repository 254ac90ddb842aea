import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { HttpSettings } from '../../adapters/http/api/app.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { sha256, staticTokenVerifier } from '../../adapters/tokens/static/static-token-verifier.js';
import { defaultServerLimits, type ServerLimits } from '../../adapters/http/server/server.js';
import { buildApp, type ApplicationSettings, type Ports } from '../../bootstrap/build-app.js';
import type { Principal, Scope } from '../../domain/principal.js';
import { freshOwner, principal } from './fixtures.js';
import { conformance } from './openapi-conformance.js';
import { suiteWith, type Setup } from './suites.js';
import { sleep } from './wait.js';
import type { StorageBackend } from './storage-backends.js';

export interface Response {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: () => unknown;
}

export interface CallOptions {
  readonly token?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  /** Sets Content-Type: application/json when a body is given and no Content-Type header is. */
  readonly json?: boolean;
}

/** Tokens of the test principals: alice and bob are different owners; the others act for alice's owner. */
export type Who = 'alice' | 'bob' | 'aliceReader' | 'aliceWriter' | 'nobody';

export interface Service {
  readonly base: string;
  readonly port: number;
  readonly token: Record<Who, string>;
  readonly principal: Record<Who, Principal>;
  /** Every log line written so far, parsed. */
  readonly logs: () => Array<Record<string, unknown>>;
  readonly call: (method: string, path: string, options?: CallOptions) => Promise<Response>;
  /** Whether the server still holds the connection of the client on this local port (false once it has closed it). */
  readonly holds: (clientPort: number) => boolean;
  readonly close: () => Promise<void>;
}

const scopesOf: Record<Who, Scope[]> = {
  alice: ['plants:read', 'plants:write'],
  bob: ['plants:read', 'plants:write'],
  aliceReader: ['plants:read'],
  aliceWriter: ['plants:write'],
  nobody: [],
};

/**
 * Starts the real HTTP service (bootstrap's buildApp, real polka, real pino) on a free loopback port, over memory
 * storage unless another repository is given. Every response of `call` is checked against /openapi.json.
 */
export const startService = async (
  overrides: Partial<Ports & ApplicationSettings & HttpSettings> = {},
  limits: Partial<ServerLimits> = {},
): Promise<Service> => {
  const aliceOwner = freshOwner('alice');
  const who = Object.keys(scopesOf) as Who[];
  const principals = Object.fromEntries(
    who.map((w) => [w, { ...principal(w === 'bob' ? freshOwner('bob') : aliceOwner, scopesOf[w]), subject: w }]),
  ) as Record<Who, Principal>;
  const tokens = Object.fromEntries(who.map((w) => [w, `token-of-${w}-${aliceOwner.slice(-12)}`])) as Record<
    Who,
    string
  >;

  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const deps: Ports & ApplicationSettings & HttpSettings = {
    plants: memoryPlantRepository(),
    tokens: staticTokenVerifier(who.map((w) => ({ sha256: sha256(tokens[w]), principal: principals[w] }))),
    logger: pino({ level: 'info', base: null }, sink),
    bodyLimit: 16384,
    ...overrides,
  };
  const server = buildApp(deps, { ...defaultServerLimits, ...limits });
  // The server's side of each connection, by the client's port: a test waits for the server to close one.
  const held = new Set<number>();
  server.on('connection', (socket: Socket) => {
    const clientPort = socket.remotePort;
    if (clientPort === undefined) return;
    held.add(clientPort);
    socket.once('close', () => held.delete(clientPort));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const docText = await (await fetch(`${base}/openapi.json`)).text();
  const conforms = conformance(docText);

  const call = async (method: string, path: string, options: CallOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
    if (
      options.body !== undefined &&
      options.json !== false &&
      !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
    ) {
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(base + path, {
      method,
      headers,
      redirect: 'manual', // the answer itself (/docs/ answers 308), never where it points
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    const text = await res.text();
    conforms(method, path, res.status, res.headers, text);
    return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as unknown };
  };

  return {
    base,
    port,
    token: tokens,
    principal: principals,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    call,
    holds: (clientPort) => held.has(clientPort),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * Sends bytes as they are over a plain socket (for requests fetch will not make: chunked bodies cut short, lying
 * lengths, odd paths) and reads one response. `parts` are written in order, `gapMs` apart.
 */
export const rawRequest = (port: number, parts: ReadonlyArray<string | Buffer>, gapMs = 0): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const parse = (): RawResponse | undefined => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const [statusLine = '', ...headerLines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      const length = Number(headers['content-length'] ?? 0);
      const body = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
      if (body.length < length) return undefined;
      return { status: Number(statusLine.split(' ')[1]), headers, body: body.subarray(0, length).toString('utf8') };
    };
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      const res = parse();
      if (res !== undefined) {
        socket.destroy();
        resolve(res);
      }
    });
    socket.on('error', (e) => {
      const res = parse();
      if (res !== undefined) resolve(res);
      else reject(e);
    });
    socket.on('close', () => {
      const res = parse();
      if (res !== undefined) resolve(res);
      else reject(new Error(`connection closed before a full response: ${data.toString('latin1').slice(0, 200)}`));
    });
    void (async () => {
      for (const part of parts) {
        if (socket.destroyed) return;
        socket.write(part);
        // Pacing on purpose: the parts reach the server in separate reads.
        if (gapMs > 0) await sleep(gapMs);
      }
    })();
  });

type ServiceSubject = { readonly svc: Service; readonly teardown: () => Promise<void> };

/** HTTP tests against one running service; each test receives `{ svc }`. */
const serviceTests = (name: string, setup: Setup<ServiceSubject>) => {
  const { test, subject, run } = suiteWith(name, setup);
  const it = (title: string, fn: (ctx: { svc: Service }) => Promise<void>) =>
    test(title, async (ctx) => fn({ svc: subject(ctx).svc }));
  return { test: it, run };
};

/** HTTP tests against the real service over memory storage, with some adapters replaced (`overrides`). */
export const serviceSuite = (name: string, overrides: Partial<Ports & HttpSettings> = {}) =>
  serviceTests(name, async () => {
    const svc = await startService(overrides);
    return { svc, teardown: svc.close };
  });

/**
 * HTTP tests over one storage backend: the real service on that backend's repository. A backend whose server is
 * missing here registers the tests as skipped, with the reason.
 */
export const httpSuite = (
  title: string,
  backend: StorageBackend,
  settings: Partial<ApplicationSettings & HttpSettings> = {},
) => {
  const make = backend.setup;
  return serviceTests(
    `${title} [${backend.name}]`,
    typeof make === 'function'
      ? async () => {
          const { repo, teardown } = await make();
          const svc = await startService({ ...settings, plants: repo });
          return {
            svc,
            teardown: async () => {
              await svc.close();
              await teardown();
            },
          };
        }
      : make,
  );
};
