import './require-supported-node.js';
import { parseArgs } from 'node:util';
import * as E from 'fp-ts/lib/Either.js';
import type { TokenGrant, Unreplicated } from '../adapters/tokens/redis/redis-token-store.js';
import type { AuthUnavailable } from '../application/errors.js';
import { Owner } from '../domain/plant.js';
import { isScope } from '../domain/principal.js';
import { isBearerToken } from '../domain/principal.js';
import { hasControlCharacter } from '../domain/plant.js';
import { ConfigError, loadConfig } from './config.js';

/**
 * `npm run --silent token -- issue|revoke|list ...` (USAGE) on the service's own configuration, AUTH=redis. An issued
 * token alone goes to stdout, a summary to stderr. Arguments are decoded before anything is sent: bad ones print the
 * usage, exit 2; `--help` prints it on stdout, exit 0.
 */
const USAGE = `usage: AUTH=redis REDIS_URL=redis://127.0.0.1:6379 npm run --silent token -- <command>
  issue --owner <owner> --subject <subject> --scopes plants:read,plants:write [--ttl <seconds>]
      issues a token and prints it, and nothing else, on stdout (a summary, naming the Redis written to, goes to
      stderr); without --ttl it never expires (until revoked). Scopes are separated by commas or spaces (quote a
      list with spaces: --scopes "plants:read plants:write"). Capture it with: TOKEN=$(npm run --silent token -- issue ...)
      (--silent keeps npm's own banner off stdout)
  revoke -        revokes the token read from standard input (one line): it stays out of shell history and ps
  revoke <token>  revokes the token given as the argument (one that starts with "-": revoke -- <token>)
  revoke --owner <owner> [--subject <subject>]
      revokes every token of the owner (of that subject only, with --subject), on every service process at once
  list [--owner <owner>] [--subject <subject>]
      prints one JSON line per live token: owner, subject, scopes, issued and expires (ISO 8601, or "never"); never
      a secret. Without --owner it walks the Redis keyspace once (SCAN) to find the owners: a command for an operator,
      not for a script run often on a large store
  --help          prints this text (also after a command: issue --help, revoke --help)
Each option at most once. The token store is the configured one: AUTH=redis and its REDIS_URL, or REDIS_SENTINELS
(a primary through Sentinel). The service that is to accept the token must run with the same configuration: a
service on the default AUTH=static answers 401 to a token issued here. With REDIS_WAIT_REPLICAS (1 by default with
REDIS_SENTINELS) a command succeeds only once that many replicas hold its writes; else it exits 1 and says so.`;

/** A token on standard input is at most this long (a b64token of TOKEN_MAX characters and a line ending). */
const STDIN_MAX = 8192;

class UsageError extends Error {}

type Command =
  | { readonly kind: 'help' }
  | { readonly kind: 'issue'; readonly grant: TokenGrant }
  | { readonly kind: 'revoke'; readonly token: string }
  | { readonly kind: 'revokeOwned'; readonly owner: string; readonly subject: string | undefined }
  | { readonly kind: 'list'; readonly owner: string | undefined; readonly subject: string | undefined }
  | { readonly kind: 'revokeFromStdin' };

const ISSUE_OPTIONS = ['owner', 'subject', 'scopes', 'ttl'] as const;
const SELECT_OPTIONS = ['owner', 'subject'] as const;

/** Each option once: parseArgs keeps the last of a repeated one, which would silently change what is issued. */
const once = (
  values: Readonly<Record<string, unknown>>,
  names: readonly string[] = ISSUE_OPTIONS,
): Record<string, string | undefined> => {
  const single: Record<string, string | undefined> = {};
  for (const name of names) {
    const given = values[name];
    const list = Array.isArray(given) ? (given as string[]) : [];
    if (list.length > 1) throw new UsageError(`--${name} is given ${list.length} times; give it once`);
    single[name] = list[0];
  }
  return single;
};

/** One subcommand's arguments, strictly: an unknown option is never a value; `--` ends the options. */
const decodeArgs = (args: string[], options: readonly string[]) => {
  try {
    return parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        ...Object.fromEntries(options.map((name) => [name, { type: 'string', multiple: true }])),
      },
    });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
};

const parseCommand = (argv: string[]): Command => {
  const [verb, ...rest] = argv;
  if (verb === '--help' || verb === '-h' || verb === 'help') return { kind: 'help' };
  if (verb === 'revoke' || verb === 'list') {
    const { values, positionals } = decodeArgs(rest, SELECT_OPTIONS);
    if (values['help'] === true) return { kind: 'help' };
    const { owner, subject } = once(values, SELECT_OPTIONS);
    if (owner !== undefined && E.isLeft(Owner.from(owner))) throw new UsageError('--owner is not a valid owner');
    if (verb === 'list' || owner !== undefined || subject !== undefined) {
      if (positionals.length > 0) throw new UsageError(`${verb} takes no argument with --owner or --subject`);
      if (verb === 'list') return { kind: 'list', owner, subject };
      if (owner === undefined) throw new UsageError('revoke --subject needs --owner');
      return { kind: 'revokeOwned', owner, subject };
    }
    if (positionals.length === 1 && positionals[0] === '-' && !rest.includes('--')) return { kind: 'revokeFromStdin' };
    const [token] = positionals;
    if (positionals.length !== 1 || token === undefined || !isBearerToken(token))
      throw new UsageError('revoke takes one token, or -');
    return { kind: 'revoke', token };
  }
  if (verb !== 'issue')
    throw new UsageError(verb === undefined ? 'a command is needed' : `unknown command ${JSON.stringify(verb)}`);
  const { values, positionals } = decodeArgs(rest, ISSUE_OPTIONS);
  if (values['help'] === true) return { kind: 'help' };
  const [stray] = positionals;
  if (stray !== undefined) {
    // `--scopes plants:read plants:write` unquoted: the shell split the list, and its second scope came here.
    throw new UsageError(
      isScope(stray)
        ? `unexpected argument "${stray}": --scopes takes one value; write plants:read,plants:write or quote the list ("plants:read plants:write")`
        : `issue takes no argument "${stray}", only options`,
    );
  }
  const { owner: ownerText, subject = '', scopes: scopesText, ttl } = once(values);
  const owner = Owner.from(ownerText ?? '');
  if (E.isLeft(owner)) throw new UsageError(`--owner ${owner.left.rule}`);
  if (subject.length < 1 || subject.length > 256 || hasControlCharacter(subject)) {
    throw new UsageError('--subject must be 1 to 256 characters without control characters');
  }
  // Commas, as the contract writes the list, or spaces, as the service's start-up banner and OAuth print scopes.
  const scopes = (scopesText ?? '').split(/[\s,]+/).filter((s) => s !== '');
  if (scopes.length === 0 || !scopes.every(isScope))
    throw new UsageError('--scopes must list plants:read and/or plants:write, separated by commas or spaces');
  let ttlSeconds: number | undefined;
  if (ttl !== undefined) {
    ttlSeconds = Number(ttl);
    if (!/^[0-9]+$/.test(ttl) || ttlSeconds < 1 || ttlSeconds > 10 * 365 * 86400) {
      throw new UsageError('--ttl must be a whole number of seconds from 1 to 315360000');
    }
  }
  const grant: TokenGrant = { owner: owner.right, subject, scopes: [...new Set(scopes)] };
  return { kind: 'issue', grant: ttlSeconds === undefined ? grant : { ...grant, ttlSeconds } };
};

/** The one line on standard input, without its line ending; a usage error unless it is a bearer token. */
const tokenFromStdin = async (): Promise<string> => {
  let text = '';
  for await (const chunk of process.stdin) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > STDIN_MAX) throw new UsageError('revoke -: standard input holds more than one token');
  }
  const token = text.replace(/\r?\n$/, '');
  if (!isBearerToken(token)) throw new UsageError('revoke -: standard input must hold one token on one line');
  return token;
};

const run = async (): Promise<number> => {
  let command: Command;
  try {
    command = parseCommand(process.argv.slice(2));
    if (command.kind === 'revokeFromStdin') command = { kind: 'revoke', token: await tokenFromStdin() };
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${e.message}\n${USAGE}\n`);
    return 2;
  }
  if (command.kind === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const config = loadConfig(process.env);
  if (config.auth.kind !== 'redis') {
    throw new ConfigError(`AUTH: the token command needs AUTH=redis (got ${config.auth.kind}); for example AUTH=redis`);
  }
  // The Redis driver is loaded only now: a usage or configuration error answers without paying for it.
  const { closeRedis, connectedTo, describeTarget, redisConnection, whenReady } =
    await import('../adapters/redis/connection.js');
  const { ownerIndexOf, redisTokenStore } = await import('../adapters/tokens/redis/redis-token-store.js');
  // The driver's first complaint (a refused connection, password or database) says why Redis did not answer; what
  // follows it is the aftermath (commands flushed from the dropped connection).
  let firstError = '';
  const { redis: where, timeoutMs, waitReplicas } = config.auth;
  const redis = redisConnection(where, timeoutMs, (e) => (firstError ||= ` (${e.message})`));
  const defaulted = where.kind === 'server' && (process.env['REDIS_URL'] ?? '') === '';
  // The Redis written to, never a credential: the service must use the same one. Through Sentinel, the primary too.
  let target = `Redis at ${describeTarget(where)}${defaulted ? ', the default: REDIS_URL is unset' : ''}`;
  /** WAIT's bound: half the command timeout, so that its answer comes before the command times out. */
  const waitMs = Math.floor(timeoutMs / 2);
  /** The store's failure as one line: it did not answer, or too few replicas acknowledged what the primary did. */
  const failed =
    (unanswered: string, unreplicated: string) =>
    (left: AuthUnavailable | Unreplicated): number => {
      process.stderr.write(
        left._tag === 'Unreplicated'
          ? `${unreplicated.replace('%', target)}: ${left.acknowledged} of the ${waitReplicas} replica(s) REDIS_WAIT_REPLICAS asks for acknowledged within ${waitMs} ms\n`
          : `the token store (${target}) did not answer${firstError}${unanswered}\n`,
      );
      return 1;
    };
  try {
    await whenReady(redis, timeoutMs);
    const primary = connectedTo(redis);
    if (where.kind === 'sentinel' && primary !== undefined) {
      target = `Redis primary ${primary}/${where.db} (through the sentinels ${where.sentinels.map((s) => `${s.host}:${s.port}`).join(',')})`;
    }
    const store = redisTokenStore(redis, {
      cacheTtlMs: 0,
      ...(waitReplicas === 0 ? {} : { replicas: { count: waitReplicas, timeoutMs: waitMs } }),
    });
    if (command.kind === 'issue') {
      const issued = await store.issue(command.grant)();
      if (E.isLeft(issued))
        return failed(
          '; nothing was issued',
          'nothing was issued: the token reached % but no replica took it in time, so it was withdrawn, not printed',
        )(issued.left);
      const { owner, subject, scopes, ttlSeconds } = command.grant;
      process.stderr.write(
        `issued a token for owner ${owner}, subject ${subject}, scopes ${scopes.join(' ')}, ${ttlSeconds === undefined ? 'no expiry' : `expires in ${ttlSeconds} s`}, into ${target}\n`,
      );
      process.stdout.write(`${issued.right}\n`);
      return 0;
    }
    if (command.kind === 'list' || command.kind === 'revokeOwned') {
      const { owner, subject } = command;
      const owners =
        owner !== undefined
          ? [owner]
          : [
              ...new Set(
                (await redis.scanStream({ match: ownerIndexOf('*'), count: 1000 }).toArray())
                  .flat()
                  .map((key: string) => key.slice(ownerIndexOf('').length)),
              ),
            ];
      let count = 0;
      for (const o of owners) {
        const done = await (command.kind === 'list' ? store.list(o, subject) : store.revokeOwned(o, subject))();
        if (E.isLeft(done))
          return failed(
            '',
            'revoked on % only, which a failover could undo; run the revoke again once a replica is up',
          )(done.left);
        if (typeof done.right === 'number') count += done.right;
        else {
          for (const { issuedAt, expiresAt, ...info } of done.right) {
            const issued = issuedAt === undefined ? null : new Date(issuedAt).toISOString();
            const expires = expiresAt === undefined ? 'never' : new Date(expiresAt).toISOString();
            process.stdout.write(`${JSON.stringify({ ...info, issued, expires })}\n`);
            count += 1;
          }
        }
      }
      const which = `${owner === undefined ? 'every owner' : `owner ${owner}`}${subject === undefined ? '' : `, subject ${subject}`}`;
      process.stderr.write(
        `${command.kind === 'list' ? 'listed' : 'revoked'} ${count} token(s) of ${which} in ${target}\n`,
      );
      if (command.kind === 'revokeOwned') process.stdout.write(`revoked ${count}\n`);
      return 0;
    }
    const revoked = await store.revoke(command.token)();
    if (E.isLeft(revoked))
      return failed(
        '; nothing was revoked',
        'revoked on % only, which a failover could undo; run the revoke again once a replica is up',
      )(revoked.left);
    process.stderr.write(`token store: ${target}\n`);
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
