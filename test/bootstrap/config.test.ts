import * as E from 'fp-ts/lib/Either.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, variables, type Env } from '../../bootstrap/config.js';
import { distRoot } from '../support/process.js';

/** The repository: dist/ sits in it. */
const root = join(distRoot, '..');

const test = suite('configuration from the environment');

const failure = (env: Env): string => {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error('expected a ConfigError');
};

test('no variables at all is the embedded default', () => {
  assert.equal(loadConfig({}), {
    port: 3000,
    host: undefined,
    logLevel: 'info',
    bodyLimit: 16384,
    serverLimits: {
      maxConnections: 1000,
      maxPipelinedRequests: 16,
      maxHeaderSize: 16384,
      maxHeaderFields: 100,
      headersTimeoutMs: 10000,
      requestTimeoutMs: 30000,
      keepAliveTimeoutMs: 5000,
      idleTimeoutMs: 60000,
      maxUnsentBytes: 67108864,
      maxBodyBytes: 67108864,
    },
    shutdownTimeoutMs: 10000,
    storage: { kind: 'memory', maxPlants: undefined },
    maxPlantsPerOwner: 10000,
    auth: { kind: 'static', tokens: undefined },
    rateLimit: {
      max: 0,
      windowMs: 60000,
      store: 'memory',
      redis: { kind: 'server', host: '127.0.0.1', port: 6379, db: 0, tls: false },
      timeoutMs: 500,
    },
    logFormat: 'json',
    metricsPort: undefined,
    corsOrigins: undefined,
    tracing: undefined,
  });
});

test('tracing is on when an OTLP endpoint is set: the general one gets /v1/traces, the traces one is used as it is', () => {
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing, {
    url: 'http://collector:4318/v1/traces',
    serviceName: 'plant-store',
    sampler: 'parentbased_always_on',
    ratio: 1,
    maxQueueSize: 2048,
  });
  const both = {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
  };
  assert.is(loadConfig(both).tracing?.url, 'https://traces.example/otlp');
  assert.is(loadConfig({ ...both, OTEL_SDK_DISABLED: 'True' }).tracing, undefined);
  assert.match(failure({ OTEL_TRACES_SAMPLER_ARG: '1.5' }), /^OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/);
  assert.match(failure({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }), /^OTEL_TRACES_SAMPLER: /);
});

test('CORS_ORIGINS is * or a list of origins, each kept as its origin; anything else names the variable', () => {
  assert.is(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, '*');
  assert.equal(loadConfig({ CORS_ORIGINS: 'https://App.example, http://localhost:5173/' }).corsOrigins, [
    'https://app.example',
    'http://localhost:5173',
  ]);
  for (const bad of ['app.example', 'https://app.example/path', 'ftp://app.example', 'https://u:p@app.example', ',']) {
    assert.match(failure({ CORS_ORIGINS: bad }), /^CORS_ORIGINS: must be \* or a comma-separated list of origins/);
  }
});

test('LOG_FORMAT and METRICS_PORT are decoded with their bounds', () => {
  const config = loadConfig({ LOG_FORMAT: 'pretty', METRICS_PORT: '9464' });
  assert.is(config.logFormat, 'pretty');
  assert.is(config.metricsPort, 9464);
  assert.match(failure({ LOG_FORMAT: 'xml' }), /^LOG_FORMAT: must be one of json, pretty/);
  assert.match(failure({ METRICS_PORT: 'x' }), /^METRICS_PORT: must be an integer from 0 to 65535/);
});

test('a bad value names the variable, the problem, the value and a good example', () => {
  assert.is(failure({ PORT: 'abc' }), 'PORT: must be an integer from 0 to 65535 (got "abc"); for example PORT=3000');
  assert.is(
    failure({ PORT: '70000' }),
    'PORT: must be an integer from 0 to 65535 (got "70000"); for example PORT=3000',
  );
  assert.match(
    failure({ STORAGE: 'postgres' }),
    /^STORAGE: must be one of memory, mongodb \(got "postgres"\); for example STORAGE=/,
  );
  assert.match(
    failure({ LOG_LEVEL: 'loud' }),
    /^LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent/,
  );
  assert.match(failure({ BODY_LIMIT: '1.5' }), /^BODY_LIMIT: must be an integer/);
});

test('the HTTP server limits are read from their variables', () => {
  const config = loadConfig({
    MAX_CONNECTIONS: '50',
    MAX_PIPELINED_REQUESTS: '4',
    MAX_HEADER_SIZE: '32768',
    MAX_HEADER_FIELDS: '200',
    HEADERS_TIMEOUT_MS: '2000',
    REQUEST_TIMEOUT_MS: '5000',
    KEEP_ALIVE_TIMEOUT_MS: '65000',
    IDLE_TIMEOUT_MS: '15000',
    MAX_UNSENT_BYTES: '8388608',
    MAX_BODY_BYTES: '33554432',
  });
  assert.equal(config.serverLimits, {
    maxConnections: 50,
    maxPipelinedRequests: 4,
    maxHeaderSize: 32768,
    maxHeaderFields: 200,
    headersTimeoutMs: 2000,
    requestTimeoutMs: 5000,
    keepAliveTimeoutMs: 65000,
    idleTimeoutMs: 15000,
    maxUnsentBytes: 8388608,
    maxBodyBytes: 33554432,
  });
  assert.match(failure({ MAX_BODY_BYTES: '1048576' }), /^MAX_BODY_BYTES: must be an integer from 16777216/);
  assert.match(failure({ MAX_UNSENT_BYTES: '1000' }), /^MAX_UNSENT_BYTES: must be an integer from 1048576/);
  assert.match(failure({ MAX_CONNECTIONS: '0' }), /^MAX_CONNECTIONS: must be an integer from 1 to 1000000/);
  assert.match(failure({ MAX_HEADER_SIZE: '100' }), /^MAX_HEADER_SIZE: must be an integer from 8192/);
  assert.is(
    failure({ HEADERS_TIMEOUT_MS: '40000' }),
    'HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS (30000) (got "40000"); for example HEADERS_TIMEOUT_MS=10000',
  );
});

test('METRICS_PORT equal to PORT stops start-up as a config error naming both (0, any free port, may repeat)', () => {
  assert.is(
    failure({ PORT: '8080', METRICS_PORT: '8080' }),
    'METRICS_PORT: must differ from PORT (8080), since /metrics gets a listener of its own (got "8080"); for example METRICS_PORT=9464',
  );
  assert.is(failure({ METRICS_PORT: '3000' }).split(':')[0], 'METRICS_PORT');
  assert.is(loadConfig({ PORT: '0', METRICS_PORT: '0' }).metricsPort, 0);
});

test('every variable is decoded, also those of a backend not chosen', () => {
  const bad = '!!not a value!!';
  for (const variable of Object.values(variables)) {
    if (E.isRight((variable.read as (raw: string) => E.Either<string, unknown>)(bad))) continue; // any text will do
    assert.throws(
      () => loadConfig({ [variable.name]: bad }),
      (e: unknown) => e instanceof ConfigError,
      variable.name,
    );
  }
  assert.match(failure({ STORAGE: 'memory', MONGODB_JOURNAL: 'yes' }), /^MONGODB_JOURNAL: must be true or false/);
});

test('a REDIS_URL whose path is not a database number, or whose port is out of range, stops start-up', () => {
  assert.match(
    failure({ AUTH: 'redis', REDIS_URL: 'redis://127.0.0.1:6379/abc' }),
    /^REDIS_URL: must name its database by number \(redis:\/\/127\.0\.0\.1:6379\/0\) or not at all; for example/,
  );
  assert.match(
    failure({ REDIS_URL: 'redis://:pw@127.0.0.1:99999' }),
    /^REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL; /,
  );
  for (const bad of ['redis://127.0.0.1:6379?db=x', 'redis://127.0.0.1:6379?db=1&db=x']) {
    assert.match(failure({ REDIS_URL: bad }), /^REDIS_URL: must name its database by number/, bad);
  }
  for (const good of ['redis://127.0.0.1:6379', 'redis://h/0', 'rediss://:pw@h:6380/15', 'redis://h:6379/']) {
    assert.is(loadConfig({ AUTH: 'redis', REDIS_URL: good }).auth.kind, 'redis', good);
  }
});

test('a MONGODB_URI with a port out of range stops start-up, also with STORAGE=memory, without repeating it', () => {
  for (const uri of [
    'mongodb://plantstore:hunter2@127.0.0.1:99999',
    'mongodb://h:0',
    'mongodb://h1:27017,h2:notaport/db',
    'mongodb://[::1]:70000',
  ]) {
    const message = failure({ STORAGE: 'memory', MONGODB_URI: uri });
    assert.match(message, /^MONGODB_URI: must name each host as host or host:port, with a port from 1 to 65535; /, uri);
    assert.not.ok(message.includes('hunter2'));
  }
  for (const uri of [
    'mongodb://u:p@h1:27017,h2/plantstore?replicaSet=rs0&retryWrites=true',
    'mongodb+srv://u:p%40ss@cluster0.example.net/plantstore?authSource=admin',
    'mongodb://[::1]:27017/?tls=true',
    'mongodb://%2Ftmp%2Fmongodb-27017.sock',
  ]) {
    assert.is(loadConfig({ STORAGE: 'mongodb', MONGODB_URI: uri }).storage.kind, 'mongodb', uri);
  }
});

test('a secret value is never repeated in the error line', () => {
  const secret = 'super-secret-token-value';
  const bad = JSON.stringify([{ token: secret + ' with space', owner: 'o', subject: 's', scopes: ['plants:read'] }]);
  const message = failure({ AUTH_TOKENS: bad });
  assert.match(message, /^AUTH_TOKENS: entry 1: token must be an RFC 6750 b64token/);
  assert.not.ok(message.includes(secret));
  const uri = 'mongodb//user:hunter2@host';
  const m2 = failure({ STORAGE: 'mongodb', MONGODB_URI: uri });
  assert.match(m2, /^MONGODB_URI: must be a mongodb:\/\/ or mongodb\+srv:\/\/ connection string; for example/);
  assert.not.ok(m2.includes('hunter2'));
});

/** Runs `body` with a fresh directory for secret files, removed after. */
const withSecrets = (body: (file: (name: string, content: string) => string, dir: string) => void) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-secrets-'));
  try {
    body((name, content) => {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    }, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

test('a REDIS_URL is decoded whole at start-up: a malformed percent-escape or a stray query parameter stops it, no secret echoed', () => {
  const escape = failure({ AUTH: 'redis', REDIS_URL: 'redis://:secret%zz@127.0.0.1:6379' });
  assert.is(
    escape,
    'REDIS_URL: has a malformed percent-escape in its user name or password (write "%" as %25); for example REDIS_URL=redis://127.0.0.1:6379',
  );
  assert.match(
    failure({ REDIS_URL: 'redis://h:6379?family=6' }),
    /^REDIS_URL: takes no query parameter other than db; /,
  );
  assert.match(failure({ REDIS_URL: 'redis:///0' }), /^REDIS_URL: must name a host/);
  const decoded = loadConfig({ AUTH: 'redis', REDIS_URL: 'rediss://us%40er:p%25w@[::1]:6390/3' });
  assert.equal(decoded.auth.kind === 'redis' && decoded.auth.redis, {
    kind: 'server',
    host: '::1',
    port: 6390,
    username: 'us@er',
    password: 'p%w',
    db: 3,
    tls: true,
  });
});

test('REDIS_SENTINELS names the sentinels instead of REDIS_URL: one replica acknowledges token writes by default', () => {
  const config = loadConfig({
    AUTH: 'redis',
    REDIS_SENTINELS: '127.0.0.1:26379, [::1]:26380',
    REDIS_SENTINEL_NAME: 'plants',
    REDIS_PASSWORD: 'pw',
    REDIS_SENTINEL_PASSWORD: 'spw',
  });
  assert.equal(config.auth.kind === 'redis' && config.auth, {
    kind: 'redis',
    redis: {
      kind: 'sentinel',
      sentinels: [
        { host: '127.0.0.1', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'plants',
      password: 'pw',
      sentinelPassword: 'spw',
      db: 0,
    },
    timeoutMs: 2000,
    cacheTtlMs: 5000,
    waitReplicas: 1,
  });
  assert.equal(config.rateLimit.redis, config.auth.kind === 'redis' ? config.auth.redis : undefined);
  const single = loadConfig({ AUTH: 'redis' });
  assert.is(single.auth.kind === 'redis' && single.auth.waitReplicas, 0);
});

test('a bad sentinel address, or REDIS_SENTINELS beside REDIS_URL, stops start-up naming the variable', () => {
  for (const bad of ['127.0.0.1', '127.0.0.1:0', 'h:26379,,h:26380', 'h:99999', 'a b:1']) {
    assert.match(
      failure({ REDIS_SENTINELS: bad }),
      /^REDIS_SENTINELS: must be a comma-separated list of at most 16 sentinels, each host:port/,
      bad,
    );
  }
  assert.match(
    failure({ REDIS_SENTINELS: '127.0.0.1:26379', REDIS_URL: 'redis://127.0.0.1:6379' }),
    /^REDIS_URL: set REDIS_URL \(one Redis\) or REDIS_SENTINELS \(a primary through Sentinel\), not both; for example REDIS_SENTINELS=/,
  );
  const stray = failure({ REDIS_PASSWORD: 'hunter2' });
  assert.match(stray, /^REDIS_PASSWORD: applies only with REDIS_SENTINELS /);
  assert.not.ok(stray.includes('hunter2'));
  assert.match(
    failure({ REDIS_SENTINELS: 'h:1', REDIS_SENTINEL_NAME: 'a/b' }),
    /^REDIS_SENTINEL_NAME: must be 1 to 100/,
  );
});

test('every secret variable may be given as <NAME>_FILE, the file read as `$(cat file)` reads it', () => {
  withSecrets((file) => {
    const uri = 'mongodb://plantstore:hunter2@mongo:27017/plantstore?replicaSet=rs0';
    const tokens = [{ token: 'from-a-file', owner: 'acme', subject: 'ci', scopes: ['plants:read'] }];
    const config = loadConfig({
      STORAGE: 'mongodb',
      MONGODB_URI_FILE: file('mongodb_uri', `${uri}\n`),
      AUTH: 'redis',
      REDIS_URL_FILE: file('redis_url', 'redis://plantstore:s3cret@redis:6379\r\n\n'),
      AUTH_TOKENS_FILE: file('auth_tokens', JSON.stringify(tokens)),
    });
    assert.is(config.storage.kind === 'mongodb' && config.storage.uri, uri);
    const redis = {
      kind: 'server',
      host: 'redis',
      port: 6379,
      username: 'plantstore',
      password: 's3cret',
      db: 0,
      tls: false,
    };
    assert.equal(config.auth.kind === 'redis' && config.auth.redis, redis);
    assert.equal(config.rateLimit.redis, redis);
    const jwt = loadConfig({ AUTH: 'jwt', JWT_SECRET_FILE: file('jwt_secret', `${'k'.repeat(40)}\n`) });
    assert.equal(jwt.auth.kind === 'jwt' && jwt.auth.key, { kind: 'secret', secret: 'k'.repeat(40) });
    const fromFile = loadConfig({ AUTH_TOKENS_FILE: file('auth_tokens', JSON.stringify(tokens)) });
    assert.is(fromFile.auth.kind === 'static' && fromFile.auth.tokens?.[0]?.owner, 'acme');
    const secrets = Object.values(variables)
      .filter((v) => 'secret' in v && v.secret)
      .map((v) => v.name);
    assert.equal(secrets.sort(), [
      'AUTH_TOKENS',
      'JWT_SECRET',
      'MONGODB_URI',
      'REDIS_PASSWORD',
      'REDIS_SENTINEL_PASSWORD',
      'REDIS_URL',
    ]);
  });
});

test('a <NAME>_FILE that cannot be used names the variable and the path, never the content', () => {
  withSecrets((file, dir) => {
    const both = failure({ REDIS_URL: 'redis://a:6379', REDIS_URL_FILE: file('redis_url', 'redis://b:6379') });
    assert.match(both, /^REDIS_URL_FILE: set REDIS_URL or REDIS_URL_FILE, not both; for example REDIS_URL_FILE=/);
    const missing = join(dir, 'missing');
    assert.is(
      failure({ MONGODB_URI_FILE: missing }),
      `MONGODB_URI_FILE: cannot read ${JSON.stringify(missing)} (ENOENT); for example MONGODB_URI_FILE=/run/secrets/mongodb_uri`,
    );
    assert.match(failure({ MONGODB_URI_FILE: dir }), /^MONGODB_URI_FILE: "[^"]+" is not a regular file; /);
    assert.match(failure({ JWT_SECRET_FILE: file('empty', '\n') }), /^JWT_SECRET_FILE: "[^"]+" is empty; /);
    const bad = failure({ MONGODB_URI_FILE: file('bad', 'mongodb//user:hunter2@host\n') });
    assert.match(bad, /^MONGODB_URI_FILE: "[^"]+": must be a mongodb:\/\/ or mongodb\+srv:\/\/ connection string; /);
    assert.not.ok(bad.includes('hunter2'));
    const tokens = failure({ AUTH_TOKENS_FILE: file('tokens', '[{"token": "secret value with spaces"}]') });
    assert.match(tokens, /^AUTH_TOKENS_FILE: "[^"]+": /);
    assert.not.ok(tokens.includes('secret value'));
  });
});

test('a <NAME>_FILE naming a FIFO is refused at once, not waited on', () => {
  withSecrets((_file, dir) => {
    const fifo = join(dir, 'fifo');
    if (spawnSync('mkfifo', [fifo]).status !== 0) throw new Error('mkfifo failed');
    assert.match(failure({ JWT_SECRET_FILE: fifo }), /^JWT_SECRET_FILE: "[^"]+" is not a regular file; /);
  });
});

test('AUTH_TOKENS entries take a plain token or a sha256, an owner, a subject and scopes', () => {
  const config = loadConfig({
    AUTH_TOKENS: JSON.stringify([
      { token: 'abc', owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] },
      { sha256: 'A'.repeat(64), owner: 'acme', subject: 'reader', scopes: ['plants:read'] },
    ]),
  });
  assert.equal(config.auth.kind === 'static' ? config.auth.tokens : undefined, [
    { secret: { token: 'abc' }, owner: 'acme', subject: 'ci', scopes: ['plants:read', 'plants:write'] },
    { secret: { sha256: 'a'.repeat(64) }, owner: 'acme', subject: 'reader', scopes: ['plants:read'] },
  ]);
  assert.match(failure({ AUTH_TOKENS: '{"token":"x"}' }), /^AUTH_TOKENS: must be a JSON array of token entries/);
  assert.match(
    failure({ AUTH_TOKENS: '[{"token":"x","owner":"o","subject":"s","scopes":["admin"]}]' }),
    /entry 1: scopes must be plants:read and\/or plants:write/,
  );
  assert.match(
    failure({ AUTH_TOKENS: '[{"sha256":"abc","owner":"o","subject":"s","scopes":[]}]' }),
    /entry 1: sha256 must be 64 hex digits/,
  );
  assert.match(
    failure({ AUTH_TOKENS: '[{"token":"x","subject":"s","scopes":[]}]' }),
    /entry 1: owner must be a string/,
  );
});

test('STORAGE=mongodb reads its own variables with their defaults', () => {
  const config = loadConfig({ STORAGE: 'mongodb' });
  assert.equal(config.storage, {
    kind: 'mongodb',
    uri: 'mongodb://127.0.0.1:27017',
    db: 'plantstore',
    timeoutMs: 2000,
    writeConcern: 'majority',
    journal: true,
    slotCacheBytes: 64 * 1024 * 1024,
  });
});

test('STORAGE=mongodb refuses a STORAGE_TIMEOUT_MS too long for the per-owner bound to be exact 60 s after a change', () => {
  assert.is(loadConfig({ STORAGE: 'mongodb', STORAGE_TIMEOUT_MS: '18333' }).storage.kind, 'mongodb');
  assert.is(
    failure({ STORAGE: 'mongodb', STORAGE_TIMEOUT_MS: '18334' }),
    'STORAGE_TIMEOUT_MS: with STORAGE=mongodb at most 18333 ms, so that the per-owner bound is exact 60 s after a change (3 x 18334 + a look\'s 0 + 5000 > 60000) (got "18334"); for example STORAGE_TIMEOUT_MS=2000',
  );
  assert.is(loadConfig({ STORAGE_TIMEOUT_MS: '60000' }).storage.kind, 'memory', "the bound is MongoDB's");
});

test('MAX_PLANTS_PER_OWNER bounds each owner (0: no bound); MEMORY_MAX_PLANTS bounds the in-memory store', () => {
  assert.is(loadConfig({ MAX_PLANTS_PER_OWNER: '0' }).maxPlantsPerOwner, 0);
  assert.is(loadConfig({ MAX_PLANTS_PER_OWNER: '25' }).maxPlantsPerOwner, 25);
  assert.equal(loadConfig({ MEMORY_MAX_PLANTS: '1000000' }).storage, { kind: 'memory', maxPlants: 1000000 });
  assert.is(
    failure({ MAX_PLANTS_PER_OWNER: '-1' }),
    'MAX_PLANTS_PER_OWNER: must be an integer from 0 to 10000000 (got "-1"); for example MAX_PLANTS_PER_OWNER=10000',
  );
  assert.is(
    failure({ MEMORY_MAX_PLANTS: '0' }),
    'MEMORY_MAX_PLANTS: must be an integer from 1 to 1000000000 (got "0"); for example MEMORY_MAX_PLANTS=1000000',
  );
});

test('every variable the code reads is in .env.example, and .env.example names no other', () => {
  const example = readFileSync(join(root, '.env.example'), 'utf8');
  const documented = [...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
  assert.equal([...documented].sort(), Object.keys(variables).sort());
});

test('docs/configuration.md documents exactly the variables the code reads', () => {
  const doc = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
  // The table's first column: one or more `NAME`s per row (`JWT_ISSUER`, `JWT_AUDIENCE` share one).
  const documented = doc
    .split('\n')
    .filter((line) => /^\| `[A-Z]/.test(line))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]));
  assert.equal([...documented].sort(), Object.keys(variables).sort());
});

/** The bounds a numeric variable's reader accepts, from its own message ("... from 1 to 1000"); undefined otherwise. */
const boundsOf = (v: { read: (raw: string) => E.Either<string, unknown> }): readonly [number, number] | undefined => {
  const read = v.read('not a number');
  const m = E.isLeft(read) ? /from (\d+) to (\d+)/.exec(read.left) : null;
  return m === null ? undefined : [Number(m[1]), Number(m[2])];
};
const UNITS: Readonly<Record<string, number>> = {
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  ms: 1,
  s: 1000,
  min: 60_000,
  h: 3_600_000,
};
/** Every "<a> to <b>" in a text, each side a number with an optional unit (`16 MiB`, `10 min`), in base units. */
const rangesIn = (text: string): Array<readonly [number, number]> =>
  [...text.matchAll(/(\d+)(?: (KiB|MiB|GiB|ms|s|min|h))? to (\d+)(?: (KiB|MiB|GiB|ms|s|min|h))?/g)].map((m) => [
    Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1),
    Number(m[3]) * (UNITS[m[4] ?? ''] ?? 1),
  ]);
const states = (text: string, [min, max]: readonly [number, number]) =>
  rangesIn(text).some(([a, b]) => a === min && b === max);

test("docs/configuration.md states every numeric variable's accepted range as its reader has it", () => {
  const rows = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8')
    .split('\n')
    .filter((line) => /^\| `[A-Z]/.test(line));
  const wrong = Object.values(variables).flatMap((v) => {
    const bounds = boundsOf(v);
    if (bounds === undefined) return [];
    const row = rows.find((line) => (line.split('|')[1] ?? '').includes(`\`${v.name}\``)) ?? '';
    return states(row.split('|')[4] ?? '', bounds) ? [] : [`${v.name} (${bounds[0]} to ${bounds[1]})`];
  });
  assert.equal(wrong, []);
});

test(".env.example shows every variable's default, and states every numeric one's range above it", () => {
  const lines = readFileSync(join(root, '.env.example'), 'utf8').split('\n');
  const wrong = Object.values(variables).flatMap((v) => {
    const at = lines.findIndex((line) => line.startsWith(`${v.name}=`));
    const shown = lines[at]?.slice(v.name.length + 1);
    const fallback: unknown = v.fallback;
    // A default decoded into a structure (REDIS_URL's) is shown as the text that decodes to it.
    const decodesToFallback = (text: string) => {
      const read: E.Either<string, unknown> = v.read(text);
      return E.isRight(read) && JSON.stringify(read.right) === JSON.stringify(fallback);
    };
    const expected =
      typeof fallback === 'number' || typeof fallback === 'string' || typeof fallback === 'boolean'
        ? String(fallback)
        : typeof fallback === 'object' && fallback !== null && shown !== undefined && decodesToFallback(shown)
          ? shown
          : '';
    const problems = shown === expected ? [] : [`${v.name}=${shown ?? '(missing)'}, default ${expected}`];
    const bounds = boundsOf(v);
    if (bounds === undefined) return problems;
    // The comment lines right above the variable's own line.
    let first = at;
    while (first > 0 && (lines[first - 1] ?? '').startsWith('#')) first -= 1;
    const comments = lines.slice(first, at).join(' ');
    return states(comments, bounds) ? problems : [...problems, `${v.name} (${bounds[0]} to ${bounds[1]})`];
  });
  assert.equal(wrong, []);
});

test.run();
