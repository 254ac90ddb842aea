import { hash } from 'node:crypto';
import * as E from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import { parse as parseJson } from 'lossless-json';
import { isBearerToken, TOKEN_MAX } from '../../domain/principal.js';
import { isScope, type Scope } from '../../domain/principal.js';
import { hasControlCharacter } from '../../domain/plant.js';

/** One entry of AUTH_TOKENS, decoded: the secret (as given, or its SHA-256) and the principal it stands for. */
export interface StaticTokenEntry {
  readonly secret: { readonly token: string } | { readonly sha256: string };
  readonly owner: string;
  readonly subject: string;
  readonly scopes: readonly Scope[];
}

/** A string codec: what `valid` accepts (as `normal` makes it), else a failure with `message`. */
const checked = <A extends string = string>(
  name: string,
  valid: (s: string) => boolean,
  message: string,
  normal = (s: string) => s,
) =>
  new t.Type<A, string, unknown>(
    name,
    (u): u is A => typeof u === 'string' && valid(u),
    (u, c) => (typeof u === 'string' && valid(u) ? t.success(normal(u) as A) : t.failure(u, c, message)),
    (s) => s,
  );

const ScopeCodec = checked<Scope>('Scope', isScope, 'scopes must be plants:read and/or plants:write');
const nonEmptyCodec = (what: string, max: number) =>
  checked(
    what,
    (u) => u.length >= 1 && u.length <= max && !hasControlCharacter(u),
    `${what} must be a string of 1 to ${max} characters`,
  );
const TokenSecretCodec = checked(
  'token',
  isBearerToken,
  `token must be an RFC 6750 b64token of at most ${TOKEN_MAX} characters`,
);
const Sha256HexCodec = checked(
  'sha256',
  (u) => /^[0-9a-fA-F]{64}$/.test(u),
  'sha256 must be 64 hex digits',
  (u) => u.toLowerCase(),
);

const EntryFieldsCodec = t.type({
  owner: nonEmptyCodec('owner', 256),
  subject: nonEmptyCodec('subject', 256),
  scopes: t.array(ScopeCodec),
});
const PlainEntryCodec = t.intersection([t.type({ token: TokenSecretCodec }), EntryFieldsCodec]);
const HashedEntryCodec = t.intersection([t.type({ sha256: Sha256HexCodec }), EntryFieldsCodec]);
const ENTRY_MEMBERS: readonly string[] = ['token', 'sha256', 'owner', 'subject', 'scopes'];
const ENTRY_SHAPE = 'must be an object with "token" or "sha256", and "owner", "subject", "scopes"';

/** One entry: its one secret member picks its codec, and an unknown member ("scope") is refused, not ignored. */
const readTokenEntry = (item: unknown): E.Either<string, StaticTokenEntry> => {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return E.left(ENTRY_SHAPE);
  const unknownMember = Object.keys(item).find((key) => !ENTRY_MEMBERS.includes(key));
  if (unknownMember !== undefined) {
    return E.left(
      `unknown member ${JSON.stringify(unknownMember.slice(0, 40))} (allowed: ${ENTRY_MEMBERS.join(', ')})`,
    );
  }
  const hasToken = Object.hasOwn(item, 'token');
  const hasSha256 = Object.hasOwn(item, 'sha256');
  if (hasToken && hasSha256) return E.left('give either "token" or "sha256", not both');
  if (!hasToken && !hasSha256) return E.left(ENTRY_SHAPE);
  const decoded: E.Either<t.Errors, t.TypeOf<typeof PlainEntryCodec> | t.TypeOf<typeof HashedEntryCodec>> = hasToken
    ? PlainEntryCodec.decode(item)
    : HashedEntryCodec.decode(item);
  if (E.isLeft(decoded)) return E.left(decoded.left.map((e) => e.message).find((m) => m !== undefined) ?? ENTRY_SHAPE);
  const entry = decoded.right;
  const secret = 'token' in entry ? { token: entry.token } : { sha256: entry.sha256 };
  return E.right({ secret, owner: entry.owner, subject: entry.subject, scopes: entry.scopes });
};

/** The SHA-256 (lower-case hex) that an entry's secret is known by, whichever way it was given. */
const secretHash = (entry: StaticTokenEntry): string =>
  'token' in entry.secret ? hash('sha256', entry.secret.token, 'hex') : entry.secret.sha256;

/** lossless-json refuses a member repeated with another value, which JSON.parse would silently keep the last of. */
const parseTokensJson = (raw: string): E.Either<'repeated member' | 'not JSON', unknown> => {
  try {
    return E.right(parseJson(raw));
  } catch (e) {
    return E.left(e instanceof Error && e.message.startsWith('Duplicate key') ? 'repeated member' : 'not JSON');
  }
};

/**
 * The static token set. Anything ambiguous stops start-up: a repeated member, both secrets, an unknown member, or one
 * secret listed twice (in any form), which would let the last entry silently decide the principal.
 */
export const readAuthTokens = (raw: string): E.Either<string, readonly StaticTokenEntry[]> => {
  const parsed = parseTokensJson(raw);
  if (E.isLeft(parsed)) {
    // The parser's own messages may quote the text, which holds secrets: only the repeated member is named.
    return E.left(
      parsed.left === 'repeated member' ? 'an entry repeats a member' : 'must be a JSON array of token entries',
    );
  }
  const json = parsed.right;
  if (!Array.isArray(json)) return E.left('must be a JSON array of token entries');
  const entries: StaticTokenEntry[] = [];
  const entryOfSecret = new Map<string, number>();
  for (const [i, item] of (json as unknown[]).entries()) {
    const decoded = readTokenEntry(item);
    if (E.isLeft(decoded)) return E.left(`entry ${i + 1}: ${decoded.left}`);
    const secret = secretHash(decoded.right);
    const earlier = entryOfSecret.get(secret);
    if (earlier !== undefined) {
      return E.left(`entries ${earlier + 1} and ${i + 1} have the same secret; list each secret once`);
    }
    entryOfSecret.set(secret, i);
    entries.push(decoded.right);
  }
  return E.right(entries);
};
