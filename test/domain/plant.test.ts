import fc from 'fast-check';
import * as E from 'fp-ts/lib/Either.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PlantText, samePlant, type PlantId, type PlantName } from '../../domain/plant.js';

const test = suite('plant name and tag rules');

const CONTROLS = [...Array(0x20).keys()].map((c) => String.fromCharCode(c)).concat('\u007f');
const codePoints = (s: string) => [...s].length;
const allowedChar = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 1 })
  .filter((c) => !CONTROLS.some((k) => c.includes(k)) && c.isWellFormed());
const visible = allowedChar.filter((c) => /\S/u.test(c));

const rule = (r: E.Either<{ rule: string }, unknown>) => (E.isLeft(r) ? r.left.rule : 'ok');

test('a name of 1 to 200 code points with a visible character and no control character is accepted as it is', () => {
  fc.assert(
    fc.property(fc.array(allowedChar, { maxLength: 199 }), visible, (rest, v) => {
      const name = [v, ...rest].join('');
      fc.pre(codePoints(name) <= 200);
      const r = PlantText.name('name', name);
      assert.ok(E.isRight(r));
      assert.is(r.right, name);
    }),
    { numRuns: 500 },
  );
});

test('length counts code points, not UTF-16 units: 200 emoji fit, 201 do not', () => {
  assert.is(rule(PlantText.name('name', '🌵'.repeat(200))), 'ok');
  assert.is(rule(PlantText.name('name', '🌵'.repeat(201))), 'must be 1 to 200 characters');
  assert.is(rule(PlantText.tag('tag', 'é'.repeat(100))), 'ok');
  assert.is(rule(PlantText.tag('tag', 'é'.repeat(101))), 'must be 1 to 100 characters');
});

test('an empty name is refused for its length', () => {
  assert.is(rule(PlantText.name('name', '')), 'must be 1 to 200 characters');
});

test('any control character anywhere is refused', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 50 }), fc.constantFrom(...CONTROLS), fc.string({ maxLength: 50 }), (a, c, b) => {
      const s = `x${a}${c}${b}`;
      fc.pre(codePoints(s) <= 200);
      assert.is(rule(PlantText.name('name', s)), 'must not contain control characters');
    }),
  );
});

test('whitespace alone is refused, Unicode whitespace included', () => {
  for (const blank of [' ', '   ', '\u00a0', '\u2003\u3000', '\u2028']) {
    assert.is(rule(PlantText.name('name', blank)), 'must contain a non-whitespace character', JSON.stringify(blank));
  }
});

test('a lone surrogate is refused: it cannot be stored as UTF-8', () => {
  assert.is(rule(PlantText.name('name', 'a\ud800b')), 'must be well-formed Unicode (no lone surrogates)');
});

test('the field name is carried into the rule broken', () => {
  const r = PlantText.tag('tag', '');
  assert.ok(E.isLeft(r));
  assert.is(r.left.field, 'tag');
});

test('two plants are the same when id, name and tag all match, an absent tag included', () => {
  const id = 7n as PlantId;
  const name = 'Fern' as PlantName;
  const tag = 'green' as PlantText<'tag'>;
  assert.ok(samePlant({ id, name }, { id, name }));
  assert.ok(samePlant({ id, name, tag }, { id, name, tag }));
  assert.not.ok(samePlant({ id, name }, { id, name, tag }));
  assert.not.ok(samePlant({ id, name, tag }, { id, name: 'Palm' as PlantName, tag }));
});

test.run();
