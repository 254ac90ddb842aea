import { createHash } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../bootstrap/config.js';
import { runNode } from '../support/process.js';
import { within } from '../support/wait.js';

/**
 * An ambiguous AUTH_TOKENS stops start-up: one secret listed twice (which entry would decide the principal?), an
 * entry with both secrets, a malformed sha256, a repeated or unknown member. The line names AUTH_TOKENS and the
 * entries, and never repeats a secret.
 */
const test = suite('AUTH_TOKENS: an ambiguous token set is refused');

const SECRET = 'secret-Token_value.1';
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const reader = { owner: 'acme', subject: 'reader', scopes: ['plants:read'] };
const writer = { owner: 'other', subject: 'writer', scopes: ['plants:read', 'plants:write'] };

const failure = (tokens: unknown): string => {
  const raw = typeof tokens === 'string' ? tokens : JSON.stringify(tokens);
  try {
    loadConfig({ AUTH_TOKENS: raw });
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error(`expected AUTH_TOKENS to be refused: ${raw}`);
};

const refused = (tokens: unknown, problem: RegExp) => {
  const message = failure(tokens);
  assert.match(message, /^AUTH_TOKENS: /);
  assert.match(message, problem);
  assert.not.ok(message.includes(SECRET), 'the secret is not echoed');
  assert.not.ok(message.includes(hex(SECRET)), 'nor its hash');
  assert.not.ok(message.includes('\n'), 'one line');
};

test('the same token listed twice is refused, whatever the principals', () => {
  refused(
    [
      { token: SECRET, ...reader },
      { token: SECRET, ...writer },
    ],
    /entries 1 and 2 have the same secret/,
  );
  refused(
    [
      { token: 'other', ...reader },
      { token: SECRET, ...reader },
      { token: SECRET, ...reader },
    ],
    /entries 2 and 3 have the same secret/,
  );
});

test('a token and the sha256 of the same secret are the same secret', () => {
  refused(
    [
      { sha256: hex(SECRET), ...reader },
      { token: SECRET, ...writer },
    ],
    /entries 1 and 2 have the same secret/,
  );
});

test('two sha256 entries equal but for letter case are the same secret', () => {
  refused(
    [
      { sha256: hex(SECRET).toUpperCase(), ...reader },
      { sha256: hex(SECRET), ...writer },
    ],
    /entries 1 and 2 have the same secret/,
  );
});

test('an entry with both token and sha256 is refused, matching or not', () => {
  refused([{ token: SECRET, sha256: hex(SECRET), ...reader }], /entry 1: give either "token" or "sha256", not both/);
  refused([{ token: SECRET, sha256: 'not-hex', ...reader }], /entry 1: give either "token" or "sha256", not both/);
});

test('a malformed sha256 is refused', () => {
  for (const sha256 of ['', 'abc', hex(SECRET).slice(1), `${hex(SECRET)}0`, 'g'.repeat(64), 42]) {
    refused([{ sha256, ...reader }], /entry 1: sha256 must be 64 hex digits/);
  }
});

test('a repeated member in an entry is refused (JSON.parse would keep the last)', () => {
  refused(
    `[{"token": "${SECRET}", "owner": "acme", "owner": "other", "subject": "s", "scopes": []}]`,
    /an entry repeats a member/,
  );
});

test('an unknown member is refused and named, so a misspelt one is not silently ignored', () => {
  refused([{ token: SECRET, ...reader, scope: ['plants:write'] }], /entry 1: unknown member "scope"/);
  refused([{ ...reader, 'sha-256': hex(SECRET) }], /entry 1: unknown member "sha-256"/);
});

test('an entry that is not an object, or has no secret, is refused', () => {
  refused([SECRET], /entry 1: must be an object with "token" or "sha256"/);
  refused([reader], /entry 1: must be an object with "token" or "sha256"/);
});

test('JSON that cannot be parsed is refused without quoting it', () => {
  refused(`[{"token": "${SECRET}", "owner": }]`, /^AUTH_TOKENS: must be a JSON array of token entries/);
});

test('distinct secrets for one principal, and tokens of other owners, are accepted', () => {
  const config = loadConfig({
    AUTH_TOKENS: JSON.stringify([
      { token: SECRET, ...reader },
      { token: `${SECRET}-rotated`, ...reader },
      { sha256: hex('third'), ...writer },
    ]),
  });
  assert.is(config.auth.kind === 'static' ? config.auth.tokens?.length : 0, 3);
});

test('the service refuses to start on a repeated secret: exit 1, one line naming AUTH_TOKENS, no secret', async () => {
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: JSON.stringify([
      { token: SECRET, ...reader },
      { sha256: hex(SECRET), ...writer },
    ]),
  });
  try {
    assert.is(await within(10_000, 'exit', svc.exited), 1);
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
  assert.match(svc.stderr(), /^config: AUTH_TOKENS: entries 1 and 2 have the same secret[^\n]*\n$/);
  assert.not.ok(svc.stderr().includes(SECRET) || svc.stdout().includes(SECRET));
  assert.not.match(svc.stdout(), /listening/);
});

test.run();
