import * as E from 'fp-ts/lib/Either.js';
import { pipe } from 'fp-ts/lib/function.js';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';

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

/** A Redis URL whose path, if any, is a database number: ioredis would send `/abc` as `SELECT NaN`. */
export const readRedisUrl = (raw: string): E.Either<string, string> => {
  const url = URL.parse(raw);
  if (url === null || !/^rediss?:\/\/[^\s]*$/.test(raw)) return E.left('must be a redis:// or rediss:// URL');
  const dbs = url.searchParams.getAll('db'); // ioredis reads `?db=` too (the last, when repeated)
  return /^(\/[0-9]{0,9})?$/.test(url.pathname) && dbs.every((db) => /^[0-9]{1,9}$/.test(db))
    ? E.right(raw)
    : E.left('must name its database by number (redis://127.0.0.1:6379/0) or not at all');
};

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
