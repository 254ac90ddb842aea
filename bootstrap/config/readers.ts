import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import type { RedisServer } from '../../adapters/redis/connection.js';
import { hasControlCharacter } from '../../domain/plant.js';

/** How one environment variable is read, and the readers the variables share: `(raw) => Either<problem, value>`. */

export type Env = Readonly<Record<string, string | undefined>>;

/** A secret variable may also be given as `<NAME>_FILE`, the path of a file that holds it (Docker and Kubernetes secrets). */
export interface Variable<A> {
  readonly name: string;
  readonly read: (raw: string) => E.Either<string, A>;
  readonly fallback: A;
  readonly example: string;
  readonly secret?: boolean;
}

export class ConfigError extends Error {}

/** The largest secret file read: far above any URI, key or token set, and a bound on what a wrong path costs. */
export const SECRET_FILE_MAX_BYTES = 1024 * 1024;

/**
 * A secret from `<NAME>_FILE`, less its trailing line breaks as `$(cat file)` reads it. Only a regular file of at most
 * SECRET_FILE_MAX_BYTES is read (a device or a FIFO would block or never end); a problem never names the content.
 */
const readSecretFile = (env: Env, v: Variable<unknown>): string | undefined => {
  const fileVariable = `${v.name}_FILE`;
  const path = env[fileVariable];
  if (path === undefined || path === '') return undefined;
  const refuse = (problem: string): never => {
    throw new ConfigError(
      `${fileVariable}: ${problem}; for example ${fileVariable}=/run/secrets/${v.name.toLowerCase()}`,
    );
  };
  if (env[v.name] !== undefined && env[v.name] !== '') refuse(`set ${v.name} or ${fileVariable}, not both`);
  let fd: number | undefined;
  try {
    // Checked before opening too: opening a FIFO blocks until something writes to it.
    if (!statSync(path).isFile()) refuse(`${JSON.stringify(path)} is not a regular file`);
    fd = openSync(path, 'r');
    const stat = fstatSync(fd);
    if (!stat.isFile()) refuse(`${JSON.stringify(path)} is not a regular file`);
    if (stat.size > SECRET_FILE_MAX_BYTES) {
      refuse(`${JSON.stringify(path)} holds ${stat.size} bytes, more than ${SECRET_FILE_MAX_BYTES}`);
    }
    const buffer = Buffer.alloc(stat.size);
    let filled = 0;
    for (let n = -1; n !== 0 && filled < buffer.length; filled += n) {
      n = readSync(fd, buffer, filled, buffer.length - filled, filled);
    }
    const text = buffer
      .subarray(0, filled)
      .toString('utf8')
      .replace(/(\r?\n)+$/, '');
    if (text === '') refuse(`${JSON.stringify(path)} is empty`);
    return text;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    const code = (e as NodeJS.ErrnoException).code ?? 'unknown error';
    return refuse(`cannot read ${JSON.stringify(path)} (${code})`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
};

export const get = <A>(env: Env, v: Variable<A>): A => {
  const fromFile = v.secret === true ? readSecretFile(env, v) : undefined;
  const raw = fromFile ?? env[v.name];
  if (raw === undefined || raw === '') return v.fallback;
  return pipe(
    v.read(raw),
    E.getOrElseW((problem) => {
      if (fromFile !== undefined) {
        throw new ConfigError(
          `${v.name}_FILE: ${JSON.stringify(env[`${v.name}_FILE`])}: ${problem}; for example a file that holds ${v.example}`,
        );
      }
      const shown = v.secret ? '' : ` (got ${JSON.stringify(raw.length > 80 ? raw.slice(0, 80) + '…' : raw)})`;
      throw new ConfigError(`${v.name}: ${problem}${shown}; for example ${v.name}=${v.example}`);
    }),
  );
};

export const readInteger = (min: number, max: number) => (raw: string) => {
  const n = Number(raw);
  return /^[0-9]+$/.test(raw) && Number.isSafeInteger(n) && n >= min && n <= max
    ? E.right(n)
    : E.left(`must be an integer from ${min} to ${max}`);
};

export const readOneOf =
  <T extends string>(values: readonly T[]) =>
  (raw: string): E.Either<string, T> =>
    (values as readonly string[]).includes(raw) ? E.right(raw as T) : E.left(`must be one of ${values.join(', ')}`);

export const readHost = (raw: string) =>
  /^[A-Za-z0-9.:_-]{1,253}$/.test(raw) ? E.right(raw) : E.left('must be a host name or IP address');

/** A MongoDB URI's form and ports, checked without loading the driver (130 ms, 20 MB) whatever STORAGE is. */
export const readMongoUri = (raw: string): E.Either<string, string> => {
  const hosts = /^mongodb(\+srv)?:\/\/(?:[^@/\s]*@)?([^@/?\s]+)(?:[/?]\S*)?$/.exec(raw);
  if (hosts === null) return E.left('must be a mongodb:// or mongodb+srv:// connection string');
  const valid = (hosts[2] ?? '').split(',').every((host) => {
    const port = /^(?:\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/.exec(host);
    return port !== null && (port[1] === undefined || (Number(port[1]) >= 1 && Number(port[1]) <= 65535));
  });
  return valid ? E.right(raw) : E.left('must name each host as host or host:port, with a port from 1 to 65535');
};

export const readDbName = (raw: string) =>
  /^[A-Za-z0-9_-]{1,63}$/.test(raw) ? E.right(raw) : E.left('must be 1 to 63 letters, digits, "_" or "-"');

export const readWriteConcern = (raw: string): E.Either<string, 'majority' | number> =>
  raw === 'majority'
    ? E.right('majority')
    : pipe(
        readInteger(1, 50)(raw),
        E.mapLeft(() => 'must be majority or a number of members from 1 to 50'),
      );

/** A percent-encoded URL part decoded, or undefined when one of its escapes is malformed (`%zz`). */
const decoded = (part: string): string | undefined => {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
};

/**
 * A Redis URL decoded completely into what the connection uses: scheme, host, port (default 6379), user name and
 * password (percent-escapes decoded), database (the path, or `?db=`; ioredis would send `/abc` as `SELECT NaN`). Any
 * other query parameter is refused: ioredis would read each as a connection option.
 */
export const readRedisUrl = (raw: string): E.Either<string, RedisServer> => {
  const url = URL.parse(raw);
  if (url === null || !/^rediss?:\/\/[^\s]*$/.test(raw)) return E.left('must be a redis:// or rediss:// URL');
  if (url.hostname === '') return E.left('must name a host (redis://127.0.0.1:6379)');
  const username = decoded(url.username);
  const password = decoded(url.password);
  if (username === undefined || password === undefined) {
    return E.left('has a malformed percent-escape in its user name or password (write "%" as %25)');
  }
  const params = [...url.searchParams.keys()];
  if (params.some((key) => key !== 'db')) return E.left('takes no query parameter other than db');
  const dbs = url.searchParams.getAll('db'); // ioredis reads `?db=` too (the last, when repeated)
  if (!/^(\/[0-9]{0,9})?$/.test(url.pathname) || !dbs.every((db) => /^[0-9]{1,9}$/.test(db))) {
    return E.left('must name its database by number (redis://127.0.0.1:6379/0) or not at all');
  }
  const db = dbs.at(-1) ?? (url.pathname.length > 1 ? url.pathname.slice(1) : '0');
  return E.right({
    kind: 'server',
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? 6379 : Number(url.port),
    ...(username === '' ? {} : { username }),
    ...(password === '' ? {} : { password }),
    db: Number(db),
    tls: url.protocol === 'rediss:',
  });
};

/** `host:port` (an IPv6 address in brackets), the port from 1 to 65535. */
const hostAndPort = (text: string): { host: string; port: number } | undefined => {
  const parts = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253}):([0-9]{1,5})$/.exec(text);
  const port = Number(parts?.[2]);
  if (parts === null || !(port >= 1 && port <= 65535)) return undefined;
  return { host: (parts[1] as string).replace(/^\[|\]$/g, ''), port };
};

/** REDIS_SENTINELS: a comma-separated list of one to 16 sentinels, each `host:port`. */
export const readSentinels = (raw: string): E.Either<string, ReadonlyArray<{ host: string; port: number }>> => {
  const items = raw.split(',').map((item) => hostAndPort(item.trim()));
  const valid = items.filter((item) => item !== undefined);
  return items.length <= 16 && valid.length === items.length
    ? E.right(valid)
    : E.left('must be a comma-separated list of at most 16 sentinels, each host:port (a port up to 65535)');
};

/** The name Sentinel monitors a primary under (`sentinel monitor <name> ...`). */
export const readSentinelName = (raw: string) =>
  /^[A-Za-z0-9._-]{1,100}$/.test(raw) ? E.right(raw) : E.left('must be 1 to 100 letters, digits, ".", "_" or "-"');

/** A password or user name for Redis: up to 512 characters, no control characters (they could not be typed in AUTH). */
export const readRedisCredential = (raw: string) =>
  raw.length <= 512 && !hasControlCharacter(raw)
    ? E.right(raw)
    : E.left('must be at most 512 characters without control characters');

export const readHttpUrl = (raw: string) => {
  const protocol = URL.parse(raw)?.protocol;
  return protocol === 'https:' || protocol === 'http:' ? E.right(raw) : E.left('must be an http(s) URL');
};

export const readJwtSecret = (raw: string) =>
  raw.length >= 32 ? E.right(raw) : E.left('must be at least 32 characters (256 bits)');

/** A PEM public key; `\n` escapes are accepted so the key fits on one line of an env file. */
export const readPem = (raw: string) => {
  const pem = raw.replace(/\\n/g, '\n');
  return /-----BEGIN PUBLIC KEY-----[\s\S]+-----END PUBLIC KEY-----/.test(pem)
    ? E.right(pem)
    : E.left('must be a PEM public key (-----BEGIN PUBLIC KEY----- ...)');
};

export const readClaim = (raw: string) =>
  /^[A-Za-z0-9_:./-]{1,100}$/.test(raw) ? E.right(raw) : E.left('must be a claim name');
export const readText = (raw: string) =>
  raw.length <= 1000 ? E.right(raw) : E.left('must be at most 1000 characters');

/** `*`, or a comma-separated list of origins (`https://app.example`, `http://localhost:5173`), each kept as its origin. */
export const readCorsOrigins = (raw: string): E.Either<string, '*' | readonly string[]> => {
  if (raw.trim() === '*') return E.right('*');
  const origins: string[] = [];
  for (const item of raw.split(',')) {
    const text = item.trim();
    const url = URL.parse(text);
    if (
      url === null ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.username !== '' ||
      url.password !== '' ||
      url.pathname !== '/' ||
      url.search !== '' ||
      url.hash !== '' ||
      text.length > 300
    ) {
      return E.left('must be * or a comma-separated list of origins (scheme://host[:port], no path)');
    }
    origins.push(url.origin);
  }
  return E.right([...new Set(origins)]);
};

export const readBoolean = (raw: string) =>
  raw === 'true' ? E.right(true) : raw === 'false' ? E.right(false) : E.left('must be true or false');

/** OpenTelemetry's booleans (OTEL_SDK_DISABLED): `true` or `false` in any letter case. */
export const readOtelBoolean = (raw: string) => readBoolean(raw.toLowerCase());

/** A sampling ratio (OTEL_TRACES_SAMPLER_ARG): a decimal number from 0 to 1. */
export const readRatio = (raw: string) => {
  const n = Number(raw);
  return /^\s*[0-9.eE+-]+\s*$/.test(raw) && Number.isFinite(n) && n >= 0 && n <= 1
    ? E.right(n)
    : E.left('must be a number from 0 to 1');
};
