/**
 * A client of the Plant Store API over `fetch` (Node.js 20+ and browsers; no Node.js built-in, no dependency). Ids are
 * `bigint`s, written into request bodies as their exact digits; plants are listed page by page through the `Link`
 * header; every failure is a `PlantStoreError`; a 503 may be retried, bounded, after its `Retry-After`.
 */
import type { components } from './schema.js';

/** A plant to create: `id` is a bigint (a `number` does not compile), exact over the whole int64 range. */
export type NewPlant = components['schemas']['NewPlant'];
/** A plant as the service answers it: its name and tag; the service never answers an id. */
export type Plant = components['schemas']['Plant'];
type ErrorBody = components['schemas']['Error'];

/** A bearer token, or a function giving one (called before every request, retries included: it may renew it). */
export type Token = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** Where the service answers, e.g. `https://plants.example.com` (a path prefix such as `/api` is kept). */
  readonly baseUrl: string | URL;
  readonly token: Token;
  /** How many times a request answered 503 is sent again, after its Retry-After (default 0: never). */
  readonly retries?: number;
  /** The longest wait before a retry, in ms (default 30000): a 503 asking for a longer one is not retried. */
  readonly maxRetryDelayMs?: number;
  /** The `fetch` to send with (default: the global one). */
  readonly fetch?: typeof fetch;
}

export interface CallOptions {
  /** Aborts the request, or the wait before a retry. */
  readonly signal?: AbortSignal;
  /** Sent as X-Request-Id on every attempt (1 to 128 of `[A-Za-z0-9._:-]`), so the server's log lines carry it. */
  readonly requestId?: string;
}

export interface PageQuery {
  /** Plants per page, 1 to 2147483647 (the service serves at most 1000); absent: 100. */
  readonly limit?: number;
  /** Where the page starts: a `cursor` of an earlier page; absent: the first page. */
  readonly cursor?: string;
}

export interface Page {
  /** Ascending by id. */
  readonly plants: Plant[];
  /** The next page's cursor (for `page({ cursor })`); undefined on the last page. */
  readonly cursor: string | undefined;
}

/**
 * What `delete` resolves to. `'deleted'`: this call's request deleted the plant (204). `'deleted-or-absent'`: an
 * attempt was answered 503 and a retry 404: the plant is gone, but whether the 503 attempt deleted it or it was never
 * there cannot be known.
 */
export type Deleted = 'deleted' | 'deleted-or-absent';

/** Every failure the service answers (and a success body that is not what the contract says). */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';
  constructor(
    /** The HTTP status of the response. */
    readonly status: number,
    /** The service's Error `message` (what to fix), or what was wrong with a response that did not carry one. */
    message: string,
    /** The response's X-Request-Id: the server's log line for the request carries it. */
    readonly requestId: string | undefined,
    /** Seconds to wait before retrying (Retry-After, on 503 and 429), when the response says. */
    readonly retryAfter: number | undefined,
  ) {
    super(message);
  }
}

type Sent = { readonly response: Response; readonly after503: boolean };

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/** Seconds from a Retry-After field: delta-seconds or an HTTP-date (RFC 9110 §10.2.3). */
const retryAfterSeconds = (field: string | null): number | undefined => {
  if (field === null) return undefined;
  if (/^\s*\d+\s*$/.test(field)) return Number(field);
  const at = Date.parse(field);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
};

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const LINK = /[\s,]*<([^>]*)>/y;
// A value is a quoted-string or a token; an unquoted value is read up to the next `;` or `,` (`type=text/html` too).
const PARAM = new RegExp(`\\s*;\\s*(${TOKEN})\\s*(?:=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s;,]+)))?`, 'y');
const END = /\s*(?:,|$)/y;

/**
 * The target of the first link whose relation types include `next` in a Link field (RFC 8288 §3: comma-separated
 * `<target>; param=value` values, `rel` a space-separated list, quoted or not, case-insensitive); undefined when there
 * is none or the field does not parse.
 */
export const nextLink = (field: string | null): string | undefined => {
  if (field === null) return undefined;
  let at = 0;
  while (at < field.length) {
    LINK.lastIndex = at;
    const link = LINK.exec(field);
    if (link === null) return undefined;
    at = LINK.lastIndex;
    let rel: string | undefined;
    for (;;) {
      PARAM.lastIndex = at;
      const param = PARAM.exec(field);
      if (param === null) break;
      at = PARAM.lastIndex;
      // Only the first rel parameter counts (§3.3).
      if (rel === undefined && param[1]?.toLowerCase() === 'rel')
        rel = param[2]?.replace(/\\(.)/g, '$1') ?? param[3] ?? '';
    }
    END.lastIndex = at;
    if (END.exec(field) === null) return undefined;
    at = END.lastIndex;
    if (rel !== undefined && rel.toLowerCase().split(/\s+/).includes('next')) return link[1];
    if (at >= field.length) break;
  }
  return undefined;
};

/** A request body with the id as its exact digits (JSON.stringify throws on a bigint; a number would be rounded). */
const newPlantJson = (plant: NewPlant): string => {
  if (typeof plant.id !== 'bigint') throw new TypeError(`id must be a bigint (got ${typeof plant.id})`);
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
};

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason as Error);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });

export class PlantStore {
  readonly #base: string;
  readonly #token: Token;
  readonly #retries: number;
  readonly #maxDelayMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.#base = String(options.baseUrl).replace(/\/+$/, '');
    this.#token = options.token;
    this.#retries = options.retries ?? 0;
    this.#maxDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    if (!Number.isInteger(this.#retries) || this.#retries < 0) throw new RangeError('retries must be an integer >= 0');
  }

  /**
   * Creates a plant and resolves the stored plant. The same plant again (same id, name and tag) resolves too: a
   * create is safe to retry. Another plant under the same id: PlantStoreError 409.
   */
  async create(plant: NewPlant, options: CallOptions = {}): Promise<Plant> {
    const { response } = await this.#send('POST', '/plants', options, newPlantJson(plant));
    if (response.status !== 200) throw await failure(response);
    return plantOf(await body(response), response);
  }

  /**
   * Deletes the plant with this id: `'deleted'`, or `'deleted-or-absent'` when a retry after a 503 answered 404 (see
   * `Deleted`). No such plant, without a 503 before: PlantStoreError 404.
   */
  async delete(id: bigint, options: CallOptions = {}): Promise<Deleted> {
    if (typeof id !== 'bigint') throw new TypeError(`id must be a bigint (got ${typeof id})`);
    const { response, after503 } = await this.#send('DELETE', `/plants/${id.toString()}`, options);
    if (response.status === 204) return 'deleted';
    if (response.status === 404 && after503) {
      await response.arrayBuffer();
      return 'deleted-or-absent';
    }
    throw await failure(response);
  }

  /** One page of the caller's plants, ascending by id, with the next page's cursor. */
  async page(query: PageQuery = {}, options: CallOptions = {}): Promise<Page> {
    const search = new URLSearchParams();
    if (query.limit !== undefined) search.set('limit', String(query.limit));
    if (query.cursor !== undefined) search.set('cursor', query.cursor);
    const path = search.toString() === '' ? '/plants' : `/plants?${search.toString()}`;
    const { response } = await this.#send('GET', path, options);
    if (response.status !== 200) throw await failure(response);
    const listed = await body(response);
    if (!Array.isArray(listed)) throw malformed(response, 'a list answered something other than an array');
    const plants = listed.map((p: unknown) => plantOf(p, response));
    const next = nextLink(response.headers.get('link'));
    if (next === undefined) return { plants, cursor: undefined };
    // The next page is read through this client's base URL with the link's cursor: the link's own path
    // (`/plants?...`) would drop a path prefix the base URL has.
    const cursor = new URL(next, response.url || this.#base).searchParams.get('cursor');
    if (cursor === null || cursor === '') throw malformed(response, 'the next link has no cursor');
    return { plants, cursor };
  }

  /**
   * Every plant of the caller's owner, ascending by id, read a page at a time by following the next links: each
   * plant once, also while plants are created or deleted meanwhile (one deleted before its page is read is not
   * yielded).
   */
  async *list(query: Pick<PageQuery, 'limit'> = {}, options: CallOptions = {}): AsyncGenerator<Plant, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.page(cursor === undefined ? query : { ...query, cursor }, options);
      yield* page.plants;
      cursor = page.cursor;
    } while (cursor !== undefined);
  }

  /** Sends, and again after each 503 while retries are left and its Retry-After is within the bound. */
  async #send(method: string, path: string, options: CallOptions, payload?: string): Promise<Sent> {
    for (let attempt = 0; ; attempt++) {
      const token = typeof this.#token === 'string' ? this.#token : await this.#token();
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      if (options.requestId !== undefined) headers['x-request-id'] = options.requestId;
      const response = await this.#fetch(this.#base + path, {
        method,
        headers,
        ...(payload === undefined ? {} : { body: payload }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      if (response.status !== 503 || attempt >= this.#retries) return { response, after503: attempt > 0 };
      // No Retry-After (a proxy's 503): one second, the service's own.
      const waitMs = (retryAfterSeconds(response.headers.get('retry-after')) ?? 1) * 1000;
      if (waitMs > this.#maxDelayMs) return { response, after503: attempt > 0 };
      await response.arrayBuffer(); // read to the end: the connection can carry the retry
      await sleep(waitMs, options.signal);
    }
  }
}

const requestIdOf = (response: Response) => response.headers.get('x-request-id') ?? undefined;

const malformed = (response: Response, what: string) =>
  new PlantStoreError(response.status, `unexpected response: ${what}`, requestIdOf(response), undefined);

/**
 * A response body as JSON. JSON.parse is exact here: no number the service answers is beyond 2^53 (it never answers
 * an id; `error` is a status), and plants are read member by member (`plantOf`), so a number could not slip in.
 */
const body = async (response: Response): Promise<unknown> => {
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw malformed(response, 'the body is not JSON');
  }
};

/** Only `name` and `tag`, checked: anything else a response carried is left out. */
const plantOf = (u: unknown, response: Response): Plant => {
  if (!isObject(u) || typeof u['name'] !== 'string' || (u['tag'] !== undefined && typeof u['tag'] !== 'string'))
    throw malformed(response, 'a plant is not {"name": string, "tag"?: string}');
  return typeof u['tag'] === 'string' ? { name: u['name'], tag: u['tag'] } : { name: u['name'] };
};

const isErrorBody = (u: unknown): u is ErrorBody =>
  isObject(u) && typeof u['error'] === 'number' && typeof u['message'] === 'string';

/** The PlantStoreError for a response that is not the operation's success. */
const failure = async (response: Response): Promise<PlantStoreError> => {
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not the Error body: a proxy's page, an empty body
  }
  const message = isErrorBody(parsed)
    ? parsed.message
    : `HTTP ${response.status} without the service's Error body (a proxy's answer, or not this service)`;
  const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
  return new PlantStoreError(response.status, message, requestIdOf(response), retryAfter);
};
