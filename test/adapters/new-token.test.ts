import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../adapters/tokens/redis/new-token.js';

const test = suite('new bearer tokens');

test('a token is 43 base64url characters and never starts with "-" (it would read as an option after a command)', () => {
  const tokens = Array.from({ length: 10_000 }, newToken);
  for (const token of tokens) assert.match(token, /^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
  assert.is(new Set(tokens).size, tokens.length);
});

test.run();
