import './require-supported-node.js';
import { parseArgs } from 'node:util';
import * as E from 'fp-ts/lib/Either.js';
import type { TokenGrant } from '../adapters/tokens/redis/redis-token-store.js';
import { Owner } from '../domain/plant.js';
import { isScope, type Scope } from '../domain/principal.js';
import { isBearerToken } from '../domain/credentials.js';
import { hasControlCharacter } from '../domain/text.js';
import { ConfigError, loadConfig } from './config.js';

/**
 * `npm run token -- issue --owner O --subject S --scopes plants:read,plants:write [--ttl SECONDS]` prints a new token
 * alone on the last line of stdout; `npm run token -- revoke TOKEN` revokes one at once (Redis reports the deletion
 * to every running service process, which drops the token from its cache: the next request with it is a 401).
 * Uses the service's own configuration (AUTH=redis, REDIS_URL, AUTH_TIMEOUT_MS). Bad arguments: a usage line, exit 2.
 */
const USAGE =
  'usage: npm run token -- issue --owner <owner> --subject <subject> --scopes plants:read,plants:write [--ttl <seconds>] | revoke <token>';

class UsageError extends Error {}

type Command =
  { readonly kind: 'issue'; readonly grant: TokenGrant } | { readonly kind: 'revoke'; readonly token: string };

const parseCommand = (argv: string[]): Command => {
  const [verb, ...rest] = argv;
  if (verb === 'revoke') {
    if (rest.length !== 1 || !isBearerToken(rest[0] as string)) throw new UsageError('revoke takes one token');
    return { kind: 'revoke', token: rest[0] as string };
  }
  if (verb !== 'issue')
    throw new UsageError(verb === undefined ? 'a command is needed' : `unknown command ${JSON.stringify(verb)}`);
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        owner: { type: 'string' },
        subject: { type: 'string' },
        scopes: { type: 'string' },
        ttl: { type: 'string' },
      },
    }));
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const owner = Owner.from(values.owner ?? '');
  if (E.isLeft(owner)) throw new UsageError(`--owner ${owner.left.rule}`);
  const subject = values.subject ?? '';
  if (subject.length < 1 || subject.length > 256 || hasControlCharacter(subject)) {
    throw new UsageError('--subject must be 1 to 256 characters without control characters');
  }
  const scopes = (values.scopes ?? '').split(',').filter((s) => s !== '');
  if (scopes.length === 0 || !scopes.every(isScope))
    throw new UsageError('--scopes must list plants:read and/or plants:write');
  let ttlSeconds: number | undefined;
  if (values.ttl !== undefined) {
    ttlSeconds = Number(values.ttl);
    if (!/^[0-9]+$/.test(values.ttl) || ttlSeconds < 1 || ttlSeconds > 10 * 365 * 86400) {
      throw new UsageError('--ttl must be a whole number of seconds from 1 to 315360000');
    }
  }
  const grant: TokenGrant = { owner: owner.right, subject, scopes: [...new Set(scopes as Scope[])] };
  return { kind: 'issue', grant: ttlSeconds === undefined ? grant : { ...grant, ttlSeconds } };
};

const run = async (): Promise<number> => {
  let command: Command;
  try {
    command = parseCommand(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${e.message}\n${USAGE}\n`);
    return 2;
  }
  const config = loadConfig(process.env);
  if (config.auth.kind !== 'redis') {
    throw new ConfigError(`AUTH: the token command needs AUTH=redis (got ${config.auth.kind}); for example AUTH=redis`);
  }
  // The Redis driver is loaded only now: a usage or configuration error answers without paying for it.
  const { closeRedis, redisConnection, whenReady } = await import('../adapters/redis/connection.js');
  const { redisTokenStore } = await import('../adapters/tokens/redis/redis-token-store.js');
  const redis = redisConnection(config.auth.url, config.auth.timeoutMs);
  try {
    await whenReady(redis, config.auth.timeoutMs);
    const store = redisTokenStore(redis, { cacheTtlMs: 0 });
    if (command.kind === 'issue') {
      const issued = await store.issue(command.grant)();
      if (E.isLeft(issued)) {
        process.stderr.write('the token store (Redis) did not answer; nothing was issued\n');
        return 1;
      }
      const { owner, subject, scopes, ttlSeconds } = command.grant;
      process.stderr.write(
        `issued a token for owner ${owner}, subject ${subject}, scopes ${scopes.join(' ')}, ${ttlSeconds === undefined ? 'no expiry' : `expires in ${ttlSeconds} s`}\n`,
      );
      process.stdout.write(`${issued.right}\n`);
      return 0;
    }
    const revoked = await store.revoke(command.token)();
    if (E.isLeft(revoked)) {
      process.stderr.write('the token store (Redis) did not answer; nothing was revoked\n');
      return 1;
    }
    process.stdout.write(revoked.right ? 'revoked\n' : 'no such token (never issued, expired or already revoked)\n');
    return revoked.right ? 0 : 1;
  } finally {
    await closeRedis(redis);
  }
};

run().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(
      e instanceof ConfigError ? `config: ${e.message}\n` : `token: ${e instanceof Error ? e.message : String(e)}\n`,
    );
    process.exit(1);
  },
);
