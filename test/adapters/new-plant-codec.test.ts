import * as E from 'fp-ts/lib/Either.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeNewPlant } from '../../adapters/http/api/codecs.js';
import { parseJson } from '../../adapters/http/api/json.js';

const ID_AS_STRING =
  'id: must be a JSON number, not a string: write 7, not "7" (an integer from -9223372036854775808 to 9223372036854775807, all its digits kept exactly)';

const test = suite('POST /plants body codec: a Plant, or the first broken field in the order id, name, tag');

const decode = (text: string) => {
  const parsed = parseJson(Buffer.from(text));
  assert.ok(E.isRight(parsed), text);
  const result = decodeNewPlant(parsed.right);
  return E.isRight(result) ? result.right : `${result.left.field}: ${result.left.rule}`;
};

test('a valid body is its plant, exactly, with only id, name and tag kept', () => {
  assert.equal(decode('{"id": 9223372036854775807, "name": "Fern"}'), { id: 9223372036854775807n, name: 'Fern' });
  assert.equal(decode('{"id": 7.0, "name": "Fern", "tag": "green", "x": [1]}'), { id: 7n, name: 'Fern', tag: 'green' });
  const p = decode('{"__proto__": {"polluted": 1}, "id": -1, "name": "a", "constructor": 2}');
  assert.equal(p, { id: -1n, name: 'a' });
  assert.is(Object.getPrototypeOf(p), Object.prototype);
});

test('a refused body names its first broken field and rule', () => {
  for (const [body, message] of [
    ['{"name": 5}', 'id: is required'],
    ['{"id": "7", "name": ""}', ID_AS_STRING],
    ['{"id": "9007199254740993", "name": "a"}', ID_AS_STRING],
    ['{"id": 7.5, "name": "a"}', 'id: must be an integer from -9223372036854775808 to 9223372036854775807'],
    [
      '{"id": 9223372036854775808, "name": "a"}',
      'id: must be an integer from -9223372036854775808 to 9223372036854775807',
    ],
    ['{"id": 1}', 'name: is required'],
    ['{"id": 1, "name": null, "tag": 3}', 'name: must be a string of 1 to 200 characters, not null'],
    ['{"id": 1, "name": "   "}', 'name: must contain a non-whitespace character'],
    [
      '{"id": 1, "name": "a", "tag": null}',
      'tag: must be left out when there is none, not null (or be a string of 1 to 100 characters)',
    ],
    ['{"id": 1, "name": "a", "tag": ""}', 'tag: must be 1 to 100 characters'],
    ['{"id": 1, "name": "a", "tag": "\\u0007"}', 'tag: must not contain control characters'],
    ['[1]', 'body: must be a JSON object'],
    ['"x"', 'body: must be a JSON object'],
  ] as const) {
    assert.is(decode(body), message, body);
  }
});

test.run();
