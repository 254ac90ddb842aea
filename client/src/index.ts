/**
 * A client of the Plant Store API over `fetch` (Node.js 20.19+, 22.12+, 24+ and browsers; no Node.js built-in, no
 * dependency). Ids are `bigint`s, written into request bodies as their exact digits; plants are listed page by page
 * through the `Link` header; every failure is a `PlantStoreError` with a `kind`; an attempt is bounded by a timeout, and
 * a 503, a network failure or a timeout may be retried, bounded.
 */
import { nextLink } from './link.js';
import type { components } from './schema.js';

/** Optional members may also be given as `undefined` (a program compiled with `exactOptionalPropertyTypes` too). */
type OrUndefined<T> = { [K in keyof T]: Pick<T, K> extends Required<Pick<T, K>> ? T[K] : T[K] | undefined };

/** A plant to create: `id` is a bigint (a `number` does not compile), exact over the whole int64 range. */
export type NewPlant = OrUndefined<components['schemas']['NewPlant']>;
/** A plant as the service answers it (every field of the served document's Plant); the service never answers an id. */
export type Plant = components['schemas']['Plant'];
type ErrorBody = components['schemas']['Error'];

/** A bearer token, or a function giving one (called before every request, retries included: it may renew it). */
export type Token = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** Where the service answers, e.g. `https://plants.example.com` (a path prefix such as `/api` is kept). */
  readonly baseUrl: string | URL;
  readonly token: Token;
  /** How many times a request is sent again after a 503, a network failure or a timeout (default 0: never). */
  readonly retries?: number | undefined;
  /** The longest wait before a retry, in ms (default 30000): a 503 asking for a longer one is not retried. */
  readonly maxRetryDelayMs?: number | undefined;
  /** How long one attempt may take, from sending to the end of the answer, in ms (default 10000; `Infinity`: no bound). */
  readonly timeoutMs?: number | undefined;
  /** The `fetch` to send with (default: the global one): wrap it to add headers, log or trace. */
  readonly fetch?: typeof fetch | undefined;
}

export interface CallOptions {
  /** Aborts the call: its attempt in flight, or the wait before a retry. */
  readonly signal?: AbortSignal | undefined;
  /** Sent as X-Request-Id on every attempt (1 to 128 of `[A-Za-z0-9._:-]`), so the server's log lines carry it. */
  readonly requestId?: string | undefined;
}

export interface PageQuery {
  /** Plants per page, 1 to 2147483647 (the service serves at most 1000); absent: 100. */
  readonly limit?: number | undefined;
  /** Where the page starts: a `cursor` of an earlier page or of a `PlantStoreError`; absent: the first page. */
  readonly cursor?: string | undefined;
}

export interface Page {
  /** Ascending by id. */
  readonly plants: Plant[];
  /** The next page's cursor (for `page({ cursor })` or `list({ cursor })`); undefined on the last page. */
  readonly cursor: string | undefined;
}

/** The caller's owner's figures against its quota (`Quota-Limit`, `Quota-Used`), answered by creates. */
export interface Quota {
  readonly limit: number;
  /** Undefined while the serving process has not counted the owner yet (MongoDB, rarely). */
  readonly used: number | undefined;
}

/** The caller's allowance in the current window (`RateLimit-*`), answered while the service limits rates. */
export interface RateLimit {
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window ends. */
  readonly resetSeconds: number;
}

/**
 * What `delete` resolves to. `'deleted'`: this call's request deleted the plant (204). `'deleted-or-absent'`: an
 * attempt got no answer or a 503 and a retry 404: the plant is gone, but whether the earlier attempt deleted it or it
 * was never there cannot be known.
 */
export type Deleted = 'deleted' | 'deleted-or-absent';

/**
 * What went wrong, for a program to switch on. No answer (`status` 0): `network` (no connection, or it broke),
 * `timeout` (an attempt outlasted `timeoutMs`), `aborted` (the caller's signal). Answers: `unauthorized` (401; also a
 * token that is empty or malformed, or a token function that threw, before sending), `missing-scope` (403),
 * `quota` (403: the owner keeps as many plants as it may), `rate-limited` (429), `conflict` (409), `not-found`
 * (404), `invalid` (400, 405, 413, 415; also an argument refused before sending), `unavailable` (502, 503, 504),
 * `storage-full` (507), `internal` (500), `unexpected` (any other status, or an answer not as the contract says).
 */
export type ErrorKind =
  | 'network'
  | 'timeout'
  | 'aborted'
  | 'unauthorized'
  | 'missing-scope'
  | 'quota'
  | 'rate-limited'
  | 'conflict'
  | 'not-found'
  | 'invalid'
  | 'unavailable'
  | 'storage-full'
  | 'internal'
  | 'unexpected';

const KINDS: Readonly<Record<number, ErrorKind>> = {
  400: 'invalid',
  401: 'unauthorized',
  403: 'missing-scope',
  404: 'not-found',
  405: 'invalid',
  409: 'conflict',
  413: 'invalid',
  415: 'invalid',
  429: 'rate-limited',
  500: 'internal',
  502: 'unavailable',
  503: 'unavailable',
  504: 'unavailable',
  507: 'storage-full',
};

/** The field of a `field: rule` message (`content-type`, `name`, a nested `a.b`). */
const FIELD = /^([A-Za-z][A-Za-z0-9.-]*): /;

export interface ErrorDetails {
  /** Absent: the kind of `status`. */
  readonly kind?: ErrorKind | undefined;
  readonly cause?: unknown;
  readonly cursor?: string | undefined;
}

/** Every failure of every call. */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';
  readonly kind: ErrorKind;
  /** From `page()` and `list()`: where the failed page starts (undefined: the first); `list({ cursor })` resumes there. */
  readonly cursor: string | undefined;
  /**
   * On `invalid`: what `message` names before its rule (the contract's `field: rule`): a create's `id`, `name` or
   * `tag`, a page's `limit` or `cursor`, the `body` or `content-type`, or (status 0) the option or argument refused
   * here, such as `requestId`. Undefined on every other kind, and when the message names none (a 405's, a proxy's).
   */
  readonly field: string | undefined;
  constructor(
    /** The HTTP status of the answer; 0 when there was none. */
    readonly status: number,
    /** The service's Error `message` (what to fix), or what went wrong without one. */
    message: string,
    /** The answer's X-Request-Id (the server's log line carries it); without an answer, the one sent, if any. */
    readonly requestId: string | undefined,
    /** Seconds to wait before retrying (Retry-After, on 503 and 429), when the answer says. */
    readonly retryAfter: number | undefined,
    details: ErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = details.kind ?? KINDS[status] ?? 'unexpected';
    this.cursor = details.cursor;
    this.field = this.kind === 'invalid' ? FIELD.exec(message)?.[1] : undefined;
  }

  /** E.g. `PlantStoreError [conflict, HTTP 409, request id 3f2a]: id: a plant with this id ...`. */
  override toString(): string {
    const id = this.requestId === undefined ? '' : `, request id ${this.requestId}`;
    return `${this.name} [${this.kind}, ${this.status === 0 ? 'no answer' : `HTTP ${this.status}`}${id}]: ${this.message}`;
  }
}

/** An answer read to its end within the attempt's time. `uncertain`: an earlier attempt's outcome is unknown. */
type Answer = {
  readonly status: number;
  readonly headers: Headers;
  readonly url: string;
  readonly text: string;
  readonly uncertain: boolean;
};

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/** Seconds from a Retry-After field: delta-seconds or an HTTP-date (RFC 9110 §10.2.3). */
const retryAfterSeconds = (field: string | null): number | undefined => {
  if (field === null) return undefined;
  if (/^\s*\d+\s*$/.test(field)) return Number(field);
  const at = Date.parse(field);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
};

/** A header's non-negative integer, or undefined. */
const count = (headers: Headers, name: string): number | undefined => {
  const field = headers.get(name);
  return field !== null && /^\d{1,15}$/.test(field) ? Number(field) : undefined;
};

/** What the service would take as the caller's X-Request-Id (otherwise it answers an id of its own). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** RFC 6750 b64token, at most 4096 characters: anything else the service answers 401. */
const BEARER = /^[A-Za-z0-9\-._~+/]+=*$/;
const bearerProblem = (token: unknown) =>
  typeof token !== 'string' || token.length > 4096 || !BEARER.test(token)
    ? `token: must be a bearer token (1 to 4096 of [A-Za-z0-9-._~+/], then any "="), got ${
        typeof token !== 'string'
          ? `a ${typeof token}`
          : token === ''
            ? 'an empty string'
            : `${token.length} characters, not all of them so`
      }`
    : undefined;

/** A refusal before sending: status 0, nothing sent. */
const refused = (kind: ErrorKind, message: string, requestId?: string, cause?: unknown) =>
  new PlantStoreError(0, message, requestId, undefined, { kind, cause });

const describe = (e: unknown): string =>
  e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);

/**
 * A request body with the id as its exact digits (JSON.stringify throws on a bigint; a number would be rounded), and
 * every other field as given: a field the schema gains is sent without a change here.
 */
const newPlantJson = (plant: NewPlant): string => {
  const { id, ...fields } = plant;
  if (typeof id !== 'bigint') throw refused('invalid', `id: must be a bigint (got ${typeof id})`);
  let rest: string;
  try {
    rest = JSON.stringify(fields);
  } catch (e) {
    throw refused('invalid', `plant: ${describe(e)}`, undefined, e);
  }
  return `{"id":${id.toString()}${rest === '{}' ? '}' : `,${rest.slice(1)}`}`;
};

/** Waits `ms`; the caller's signal ends the wait with an `aborted` PlantStoreError. */
const sleep = (ms: number, signal: AbortSignal | undefined, requestId: string | undefined) =>
  new Promise<void>((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      reject(refused('aborted', 'aborted by the caller’s signal', requestId, signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    if (signal?.aborted === true) abort();
    else signal?.addEventListener('abort', abort, { once: true });
  });

export class PlantStore {
  readonly #base: string;
  readonly #token: Token;
  readonly #retries: number;
  readonly #maxDelayMs: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  #quota: Quota | undefined;
  #rateLimit: RateLimit | undefined;

  /** Throws a PlantStoreError (`invalid`, or `unauthorized` for a token string) for an option it cannot use. */
  constructor(options: ClientOptions) {
    this.#base = String(options.baseUrl).replace(/\/+$/, '');
    this.#token = options.token;
    this.#retries = options.retries ?? 0;
    this.#maxDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    try {
      new URL(this.#base);
    } catch (e) {
      throw refused('invalid', `baseUrl: must be an absolute URL, got ${JSON.stringify(this.#base)}`, undefined, e);
    }
    if (!Number.isInteger(this.#retries) || this.#retries < 0)
      throw refused('invalid', 'retries: must be an integer >= 0');
    if (!(this.#maxDelayMs >= 0)) throw refused('invalid', 'maxRetryDelayMs: must be a number >= 0');
    if (!(this.#timeoutMs > 0)) throw refused('invalid', 'timeoutMs: must be a number > 0 (Infinity: no bound)');
    const problem = typeof this.#token === 'function' ? undefined : bearerProblem(this.#token);
    if (problem !== undefined) throw refused('unauthorized', problem);
  }

  /** The Quota-Limit and Quota-Used of the last answer that carried them (a create's, also a refused one's). */
  get quota(): Quota | undefined {
    return this.#quota;
  }

  /** The RateLimit-* fields of the last answer that carried them (every answer, while the service limits rates). */
  get rateLimit(): RateLimit | undefined {
    return this.#rateLimit;
  }

  /**
   * Creates a plant and resolves the stored plant. The same plant again (same id, name and tag) resolves too: a
   * create is safe to retry. Another plant under the same id: PlantStoreError `conflict`.
   */
  async create(plant: NewPlant, options: CallOptions = {}): Promise<Plant> {
    const answer = await this.#send('POST', '/plants', options, newPlantJson(plant));
    if (answer.status !== 200) throw failure(answer);
    return plantOf(body(answer), answer);
  }

  /**
   * Deletes the plant with this id: `'deleted'`, or `'deleted-or-absent'` when a retry answered 404 (see `Deleted`).
   * No such plant, without an uncertain attempt before: PlantStoreError `not-found`.
   */
  async delete(id: bigint, options: CallOptions = {}): Promise<Deleted> {
    if (typeof id !== 'bigint') throw refused('invalid', `id: must be a bigint (got ${typeof id})`);
    const answer = await this.#send('DELETE', `/plants/${id.toString()}`, options);
    if (answer.status === 204) return 'deleted';
    if (answer.status === 404 && answer.uncertain) return 'deleted-or-absent';
    throw failure(answer);
  }

  /** One page of the caller's plants, ascending by id, with the next page's cursor. */
  async page(query: PageQuery = {}, options: CallOptions = {}): Promise<Page> {
    const search = new URLSearchParams();
    if (query.limit !== undefined) search.set('limit', String(query.limit));
    if (query.cursor !== undefined) search.set('cursor', query.cursor);
    const path = search.toString() === '' ? '/plants' : `/plants?${search.toString()}`;
    const answer = await this.#send('GET', path, options, undefined, query.cursor);
    if (answer.status !== 200) throw failure(answer, query.cursor);
    const listed = body(answer, query.cursor);
    if (!Array.isArray(listed)) throw malformed(answer, 'a list answered something other than an array', query.cursor);
    const plants = listed.map((p: unknown) => plantOf(p, answer, query.cursor));
    const next = nextLink(answer.headers.get('link'));
    if (next === undefined) return { plants, cursor: undefined };
    // The next page is read through this client's base URL with the link's cursor: the link's own path
    // (`/plants?...`) would drop a path prefix the base URL has.
    const cursor = new URL(next, answer.url || this.#base).searchParams.get('cursor');
    if (cursor === null || cursor === '') throw malformed(answer, 'the next link has no cursor', query.cursor);
    return { plants, cursor };
  }

  /**
   * Every plant of the caller's owner from `cursor` on (absent: the first), ascending by id, read a page at a time by
   * following the next links: each plant once, also while plants are created or deleted meanwhile (one deleted before
   * its page is read is not yielded). A failed page rejects with its `cursor`: `list({ cursor })` resumes there. A
   * next link naming a cursor this listing has already read rejects (`unexpected`) instead of looping.
   */
  async *list(query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<Plant, void, undefined> {
    const read = new Set<string>();
    let cursor = query.cursor;
    for (;;) {
      if (cursor !== undefined) read.add(cursor);
      const page = await this.page({ limit: query.limit, cursor }, options);
      yield* page.plants;
      if (page.cursor === undefined) return;
      if (read.has(page.cursor))
        throw new PlantStoreError(
          200,
          `unexpected response: the next link repeats the cursor ${page.cursor}`,
          undefined,
          undefined,
          {
            kind: 'unexpected',
          },
        );
      cursor = page.cursor;
    }
  }

  /**
   * Sends, each attempt bounded by the timeout and read to its end; again after a 503, a network failure or a
   * timeout while retries are left (after Retry-After, or 1 s: the service's own) and the wait is within the bound.
   */
  async #send(method: string, path: string, call: CallOptions, payload?: string, cursor?: string): Promise<Answer> {
    const requestId = call.requestId;
    const noAnswer = (kind: ErrorKind, message: string, cause?: unknown) =>
      new PlantStoreError(0, message, requestId, undefined, { kind, cause, cursor });
    if (requestId !== undefined && !REQUEST_ID.test(requestId))
      throw noAnswer('invalid', 'requestId: must be 1 to 128 of [A-Za-z0-9._:-]; the service would answer another');
    for (let attempt = 0, uncertain = false; ; attempt++, uncertain = true) {
      let token: string;
      try {
        token = typeof this.#token === 'string' ? this.#token : await this.#token();
      } catch (e) {
        throw noAnswer('unauthorized', `the token function failed: ${describe(e)}`, e);
      }
      const problem = bearerProblem(token);
      if (problem !== undefined) throw noAnswer('unauthorized', problem);
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      if (requestId !== undefined) headers['x-request-id'] = requestId;
      const timeout = this.#timeoutMs === Infinity ? undefined : AbortSignal.timeout(this.#timeoutMs);
      const signals = [call.signal, timeout].filter((s) => s !== undefined);
      const signal = signals.length === 2 ? AbortSignal.any(signals) : signals[0];
      let waitMs: number;
      try {
        const response = await this.#fetch(this.#base + path, {
          method,
          headers,
          ...(payload === undefined ? {} : { body: payload }),
          ...(signal === undefined ? {} : { signal }),
        });
        // Read to the end within the attempt: the connection can then carry the next request.
        const answer = {
          status: response.status,
          headers: response.headers,
          url: response.url,
          text: await response.text(),
          uncertain,
        };
        this.#observe(answer.headers);
        if (answer.status !== 503 || attempt >= this.#retries) return answer;
        // No Retry-After (a proxy's 503): one second, the service's own.
        waitMs = (retryAfterSeconds(answer.headers.get('retry-after')) ?? 1) * 1000;
        if (waitMs > this.#maxDelayMs) return answer;
      } catch (e) {
        if (call.signal?.aborted === true)
          throw noAnswer('aborted', 'aborted by the caller’s signal', call.signal.reason);
        const failed =
          timeout?.aborted === true
            ? noAnswer('timeout', `no answer within ${this.#timeoutMs} ms (timeoutMs)`, e)
            : noAnswer('network', `no answer: ${describe(e)}`, e);
        if (attempt >= this.#retries || this.#maxDelayMs < 1000) throw failed;
        waitMs = 1000;
      }
      await sleep(waitMs, call.signal, requestId);
    }
  }

  #observe(headers: Headers) {
    const [limit, used] = [count(headers, 'quota-limit'), count(headers, 'quota-used')];
    if (limit !== undefined) this.#quota = { limit, used };
    const [rate, remaining, resetSeconds] = ['limit', 'remaining', 'reset'].map((f) =>
      count(headers, `ratelimit-${f}`),
    );
    if (rate !== undefined && remaining !== undefined && resetSeconds !== undefined)
      this.#rateLimit = { limit: rate, remaining, resetSeconds };
  }
}

const requestIdOf = (answer: Answer) => answer.headers.get('x-request-id') ?? undefined;

const malformed = (answer: Answer, what: string, cursor?: string) =>
  new PlantStoreError(answer.status, `unexpected response: ${what}`, requestIdOf(answer), undefined, {
    kind: 'unexpected',
    cursor,
  });

/**
 * An answer's body as JSON. JSON.parse is exact here: no number the service answers is beyond 2^53 (it never answers
 * an id; `error` is a status), and plants are read field by field (`plantOf`), so a number could not slip in.
 */
const body = (answer: Answer, cursor?: string): unknown => {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch {
    throw malformed(answer, 'the body is not JSON', cursor);
  }
};

/**
 * Each field of a plant and its JSON type (`?`: may be absent), for every field of the generated schema's Plant: a
 * field the served document gains fails to compile here until it is listed, so none is dropped unnoticed.
 */
const PLANT_FIELDS: {
  readonly [K in keyof Plant]-?: NonNullable<Plant[K]> extends string
    ? Pick<Plant, K> extends Required<Pick<Plant, K>>
      ? 'string'
      : 'string?'
    : never;
} = { name: 'string', tag: 'string?' };

/** Each field of PLANT_FIELDS, checked; anything else an answer carries is left out. */
const plantOf = (u: unknown, answer: Answer, cursor?: string): Plant => {
  const plant: Record<string, string> = {};
  for (const [field, type] of Object.entries(PLANT_FIELDS)) {
    const value = isObject(u) ? u[field] : undefined;
    if (typeof value === 'string') plant[field] = value;
    else if (value !== undefined || type === 'string')
      throw malformed(answer, `a plant's ${field} is not a string`, cursor);
  }
  return plant as Plant;
};

const isErrorBody = (u: unknown): u is ErrorBody =>
  isObject(u) && typeof u['error'] === 'number' && typeof u['message'] === 'string';

/** The PlantStoreError for an answer that is not the operation's success. */
const failure = (answer: Answer, cursor?: string): PlantStoreError => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    // not the Error body: a proxy's page, an empty body
  }
  const message = isErrorBody(parsed)
    ? parsed.message
    : `HTTP ${answer.status} without the service's Error body (a proxy's answer, or not this service)`;
  // A full quota is the 403 that carries the owner's figures, and no scope challenge.
  const quota = answer.status === 403 && answer.headers.get('quota-limit') !== null;
  return new PlantStoreError(
    answer.status,
    message,
    requestIdOf(answer),
    retryAfterSeconds(answer.headers.get('retry-after')),
    {
      cursor,
      ...(quota ? { kind: 'quota' } : {}),
    },
  );
};
