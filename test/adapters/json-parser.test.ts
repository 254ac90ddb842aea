import fc from 'fast-check';
import * as E from 'fp-ts/lib/Either.js';
import { LosslessNumber, parse as losslessParse } from 'lossless-json';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { JSON_LIMITS, jsonParser, REPEATED_MEMBER } from '../../adapters/http/api/json.js';
import { assertLinear, perCallMs, sized } from '../edge/cost.js';

/**
 * The JSON body parser. Each input text is generated from a model that also says what the parse must give (exact
 * numbers, decoded strings, `__proto__` as an own member, a 400 for any repeated member name); mutated texts are held
 * to JSON.parse's grammar and, where the runtime offers source text to revivers (Node 22+), to an independent exact
 * parse built on it.
 */

type Model =
  | { readonly kind: 'number'; readonly source: string }
  | { readonly kind: 'string'; readonly text: string; readonly value: string }
  | { readonly kind: 'literal'; readonly text: 'true' | 'false' | 'null'; readonly value: boolean | null }
  | { readonly kind: 'array'; readonly items: readonly Model[] }
  | { readonly kind: 'object'; readonly members: ReadonlyArray<readonly [StringModel, Model]> };
type StringModel = Extract<Model, { kind: 'string' }>;

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });

/** RFC 8259 numbers, including integers far beyond 2^53 and hostile exponents. */
const numberSourceArb = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.constantFrom(...'123456789'), digits(0, 40)).map(([a, b]) => a + b),
    ),
    fc.option(digits(1, 20), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 5)), { nil: undefined }),
  )
  .map(([neg, whole, fraction, exponent]) => {
    const sign = neg ? '-' : '';
    const frac = fraction === undefined ? '' : `.${fraction}`;
    const exp = exponent === undefined ? '' : exponent.join('');
    return `${sign}${whole}${frac}${exp}`;
  });

const hex4 = (code: number, upper: boolean) => {
  const h = code.toString(16).padStart(4, '0');
  return upper ? h.toUpperCase() : h;
};
const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f' };
Object.assign(SHORT_ESCAPES, { '\n': '\\n', '\r': '\\r', '\t': '\\t' });

/** One UTF-16 unit of a string, written raw where JSON allows it, else (or at random) escaped. */
const unitText = (unit: string, style: number): string => {
  const code = unit.charCodeAt(0);
  const isSurrogate = code >= 0xd800 && code <= 0xdfff;
  const rawAllowed = code >= 0x20 && unit !== '"' && unit !== '\\' && !isSurrogate;
  if (rawAllowed && style % 3 !== 0) return unit;
  if (SHORT_ESCAPES[unit] !== undefined && style % 2 === 0) return SHORT_ESCAPES[unit];
  return `\\u${hex4(code, style % 5 === 0)}`;
};

const stringOf = (value: string, styles: readonly number[]): StringModel => {
  // Code points are written whole when both halves are raw-writable; a lone surrogate is always escaped.
  let text = '"';
  const units = value.split('');
  for (let i = 0; i < units.length; i++) {
    const unit = units[i] as string;
    const code = unit.charCodeAt(0);
    const style = styles[i % Math.max(styles.length, 1)] ?? 1;
    const next = units[i + 1]?.charCodeAt(0) ?? 0;
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff && style % 3 !== 0) {
      text += unit + (units[i + 1] as string);
      i++;
    } else text += unitText(unit, style);
  }
  return { kind: 'string', text: text + '"', value };
};

const styles = fc.array(fc.nat(29), { minLength: 1, maxLength: 8 });
const stringArb = fc
  .tuple(fc.string({ unit: 'binary', maxLength: 12 }), styles)
  .map(([value, s]) => stringOf(value, s));
/** Member names, few enough that repeats (also spelt differently: "a" and "\u0061") come up often. */
const nameArb = fc
  .tuple(
    fc.oneof(
      fc.constantFrom('a', 'b', 'id', 'name', '__proto__', 'constructor', '0', '1', '10', '', 'é', '\u0000'),
      fc.string({ unit: 'binary', maxLength: 6 }),
    ),
    styles,
  )
  .map(([value, s]) => stringOf(value, s));

const { model } = fc.letrec<{ model: Model }>((tie) => ({
  model: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberSourceArb.map((source): Model => ({ kind: 'number', source })),
    stringArb,
    fc
      .constantFrom('true', 'false', 'null')
      .map((text): Model => ({ kind: 'literal', text, value: text === 'null' ? null : text === 'true' })),
    fc.array(tie('model'), { maxLength: 5 }).map((items): Model => ({ kind: 'array', items })),
    fc.array(fc.tuple(nameArb, tie('model')), { maxLength: 5 }).map((members): Model => ({ kind: 'object', members })),
  ),
}));

const WHITESPACE = ['', ' ', '\n', '\t', '\r\n  '];
const render = (m: Model, ws: readonly number[], at = { i: 0 }): string => {
  const w = () => WHITESPACE[(ws[at.i++ % ws.length] ?? 0) % WHITESPACE.length] as string;
  switch (m.kind) {
    case 'number':
      return m.source;
    case 'string':
    case 'literal':
      return m.text;
    case 'array':
      return `[${w()}${m.items.map((item) => `${w()}${render(item, ws, at)}${w()}`).join(',')}]`;
    case 'object':
      return `{${w()}${m.members.map(([k, v]) => `${w()}${k.text}${w()}:${w()}${render(v, ws, at)}`).join(',')}${w()}}`;
  }
};

const REPEATED = Symbol('repeated member');
/** What the parse must give: the value, or REPEATED when some object repeats a member name. */
const expected = (m: Model): unknown => {
  switch (m.kind) {
    case 'number':
      return new LosslessNumber(m.source);
    case 'string':
    case 'literal':
      return m.value;
    case 'array': {
      const items = m.items.map(expected);
      return items.includes(REPEATED) ? REPEATED : items;
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of m.members) {
        const value = expected(v);
        if (value === REPEATED || Object.hasOwn(out, k.value)) return REPEATED;
        Object.defineProperty(out, k.value, { value, writable: true, enumerable: true, configurable: true });
      }
      return out;
    }
  }
};

/**
 * Where two parsed values differ (undefined when they do not): numbers by their source text, objects by their own
 * members in order and their prototype. (uvu's equal compares `constructor`, which a member may be.)
 */
const difference = (a: unknown, b: unknown, at = '$'): string | undefined => {
  if (a instanceof LosslessNumber || b instanceof LosslessNumber) {
    return a instanceof LosslessNumber && b instanceof LosslessNumber && a.value === b.value ? undefined : at;
  }
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null)
    return Object.is(a, b) ? undefined : at;
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return at;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i]))
    return `${at} (members ${JSON.stringify(ka)} vs ${JSON.stringify(kb)})`;
  for (const k of ka) {
    const d = difference(
      (a as Record<string, unknown>)[k],
      (b as Record<string, unknown>)[k],
      `${at}[${JSON.stringify(k)}]`,
    );
    if (d !== undefined) return d;
  }
  return undefined;
};
const assertSame = (
  got: E.Either<{ reason: string }, unknown>,
  want: E.Either<{ reason: string }, unknown>,
  text: string,
) => {
  if (E.isLeft(got) || E.isLeft(want)) assert.equal(got, want, text);
  else {
    const d = difference(got.right, want.right);
    assert.ok(d === undefined, `${text}: differs at ${d}`);
  }
};

const caseArb = fc.tuple(model, fc.array(fc.nat(9), { minLength: 1, maxLength: 16 }));
const bytesOf = (text: string) => Buffer.from(text, 'utf8');

{
  const test = suite('JSON body parser');
  const parse = jsonParser(JSON_LIMITS);

  test('every generated document parses to its model: exact numbers, decoded strings, own __proto__', () => {
    fc.assert(
      fc.property(caseArb, ([m, ws]) => {
        const want = expected(m);
        const text = render(m, ws);
        const got = parse(bytesOf(text));
        if (want === REPEATED) assert.equal(got, E.left({ _tag: 'MalformedBody', reason: REPEATED_MEMBER }), text);
        else assertSame(got, E.right(want), text);
      }),
      { numRuns: 3000 },
    );
  });

  test('agrees with lossless-json on every document without a repeated member name', () => {
    fc.assert(
      fc.property(caseArb, ([m, ws]) => {
        fc.pre(expected(m) !== REPEATED);
        const text = render(m, ws);
        assertSame(parse(bytesOf(text)), E.right(losslessParse(text)), text);
      }),
      { numRuns: 1000 },
    );
  });

  test('a member named __proto__ is an own member and never a prototype', () => {
    const got = parse(bytesOf('{"__proto__": {"admin": true}, "a": {"__proto__": [1]}}'));
    assert.ok(E.isRight(got));
    const value = got.right as Record<string, unknown>;
    assert.is(Object.getPrototypeOf(value), Object.prototype);
    assert.ok(Object.hasOwn(value, '__proto__'));
    assert.is((value as { admin?: unknown }).admin, undefined);
    assert.ok(Object.hasOwn(value['a'] as object, '__proto__'));
    assert.is(({} as Record<string, unknown>)['admin'], undefined);
  });

  test('integers beyond 2^53 keep their exact text', () => {
    const got = parse(bytesOf('{"id": 9007199254740993, "more": [-9223372036854775808, 1e400, 0.1]}'));
    assert.equal(
      got,
      E.right({
        id: new LosslessNumber('9007199254740993'),
        more: [new LosslessNumber('-9223372036854775808'), new LosslessNumber('1e400'), new LosslessNumber('0.1')],
      }),
    );
  });

  test('a repeated member name is refused at any depth, also with an equal value or another spelling', () => {
    for (const text of [
      '{"a":1,"a":1}',
      '{"a":1,"\\u0061":2}',
      '[{"x":{"y":[],"y":[]}}]',
      '{"__proto__":1,"__proto__":2}',
    ]) {
      assert.equal(parse(bytesOf(text)), E.left({ _tag: 'MalformedBody', reason: REPEATED_MEMBER }), text);
    }
  });

  test('nesting deeper than the limit is refused before anything is built; at the limit it is read', () => {
    const depth = JSON_LIMITS.maxDepth;
    assert.ok(E.isRight(parse(bytesOf('['.repeat(depth) + ']'.repeat(depth)))));
    assert.equal(
      parse(bytesOf('['.repeat(depth + 1) + ']'.repeat(depth + 1))),
      E.left({ _tag: 'MalformedBody', reason: `must not nest objects and arrays more than ${depth} deep` }),
    );
    // brackets inside strings are text, not nesting
    assert.ok(E.isRight(parse(bytesOf(`["${'['.repeat(depth * 2)}\\"${'{'.repeat(depth)}"]`))));
  });

  test('more members and elements than the limit are refused; exactly the limit is read', () => {
    const max = JSON_LIMITS.maxValues;
    assert.ok(E.isRight(parse(bytesOf(`[${'0,'.repeat(max - 1)}0]`))));
    const tooMany = `must have at most ${max} object members and array elements in total`;
    assert.equal(parse(bytesOf(`[${'0,'.repeat(max)}0]`)), E.left({ _tag: 'MalformedBody', reason: tooMany }));
    const members = (n: number) => Array.from({ length: n }, (_, i) => `"k${i}":[]`).join(',');
    assert.ok(E.isRight(parse(bytesOf(`{${members(max)}}`))));
    assert.equal(parse(bytesOf(`{${members(max + 1)}}`)), E.left({ _tag: 'MalformedBody', reason: tooMany }));
    const mixed = `{"a":[${'[],'.repeat(max / 2)}[]],"b":{${members(max / 2)}}}`; // max + 3 in all
    assert.equal(parse(bytesOf(mixed)), E.left({ _tag: 'MalformedBody', reason: tooMany }));
    // commas and colons inside strings count for nothing
    assert.ok(E.isRight(parse(bytesOf(`["${',:'.repeat(max)}"]`))));
  });

  test('its cost is linear in the body: 16x the bytes, in every shape, cost at most linear time', () => {
    const shapes: Array<[string, (n: number) => string]> = [
      ['many members', (n) => `{${Array.from({ length: n }, (_, i) => `"m${i}":${i}`).join(',')}}`],
      ['a long array of big numbers', (n) => `[${'12345678901234567890,'.repeat(n)}0]`],
      ['one long string of escapes', (n) => `{"a":"${'\\u00e9\\n'.repeat(n)}"}`],
      ['backslashes before quotes', (n) => `["${'\\\\'.repeat(n)}", "${'\\"'.repeat(n)}"]`],
      ['escaped member names', (n) => `{${Array.from({ length: n }, (_, i) => `"\\u006d${i}":[]`).join(',')}}`],
      ['repeated names, equal values', (n) => `{"a":[${'1,'.repeat(n)}1],"a":[${'1,'.repeat(n)}1]}`],
      ['nesting at the bound, then long', (n) => `${'['.repeat(63)}${'0,'.repeat(n)}0${']'.repeat(63)}`],
    ];
    for (const [shape, make] of shapes) {
      const small = bytesOf(sized(1024, make));
      const large = bytesOf(sized(16 * 1024, make));
      assertLinear(
        shape,
        perCallMs(() => parse(small)),
        perCallMs(() => parse(large)),
        16,
      );
    }
  });

  test('text that is not JSON, or not UTF-8, is refused with the reason', () => {
    for (const text of ['', '{', '{"a":1,}', '[01]', '{"a" 1}', '"\u0001"', 'nul', '1 2', "{'a':1}", '[1,]', '-']) {
      const got = parse(bytesOf(text));
      assert.ok(E.isLeft(got) && got.left.reason.startsWith('must be valid JSON ('), text);
    }
    assert.equal(
      parse(Buffer.from([0x22, 0xff, 0x22])),
      E.left({ _tag: 'MalformedBody', reason: 'must be UTF-8 encoded' }),
    );
  });

  test.run();
}

/** Whether this runtime gives revivers the source text of primitives (JSON.parse source text access, Node 22+). */
const reviverSourceAvailable: boolean = (() => {
  let seen: unknown;
  JSON.parse('12345678901234567890', (_key: string, value: unknown, context?: { source?: string }) => {
    seen = context?.source;
    return value;
  });
  return seen === '12345678901234567890';
})();

const mutations = suite('JSON body parser, on texts mostly not JSON any more');
{
  const parse = jsonParser(JSON_LIMITS);
  const ALPHABET = [...'{}[],:"\\ 0123456789-+.eEtrufalsn', '\\u00', 'é', '\u2028'];
  /** A generated document with a few random edits: mostly not JSON any more, in every possible way. */
  const mutated = fc
    .tuple(caseArb, fc.array(fc.tuple(fc.nat(), fc.nat(2), fc.constantFrom(...ALPHABET)), { maxLength: 3 }))
    .map(([[m, ws], edits]) => {
      let text = render(m, ws);
      for (const [at, op, piece] of edits) {
        const i = text.length === 0 ? 0 : at % (text.length + 1);
        text =
          op === 0
            ? text.slice(0, i) + text.slice(i + 1)
            : op === 1
              ? text.slice(0, i) + piece + text.slice(i)
              : text.slice(0, i);
      }
      return text;
    });

  /**
   * JSON.parse's verdict on the text as the body's bytes carry it (a lone surrogate becomes U+FFFD in UTF-8), and with
   * a reviver given numbers' source text (Node 22+), its exact value.
   */
  const oracle = (raw: string): { valid: boolean; value?: unknown } => {
    const text = bytesOf(raw).toString('utf8');
    try {
      if (!reviverSourceAvailable) {
        JSON.parse(text);
        return { valid: true };
      }
      return {
        valid: true,
        value: JSON.parse(text, (_key: string, value: unknown, context?: { source?: string }) =>
          typeof value === 'number' ? new LosslessNumber(context?.source as string) : value,
        ),
      };
    } catch {
      return { valid: false };
    }
  };

  mutations('refuses what JSON.parse refuses, and accepts the rest unless a member name repeats', () => {
    fc.assert(
      fc.property(mutated, (text) => {
        const got = parse(bytesOf(text));
        const want = oracle(text);
        if (!want.valid) assert.ok(E.isLeft(got), text);
        else if (E.isLeft(got)) assert.is(got.left.reason, REPEATED_MEMBER, text);
      }),
      { numRuns: 5000 },
    );
  });

  if (!reviverSourceAvailable) {
    process.stdout.write(
      `\n  SKIPPED JSON body parser against a reviver's source text: needs Node 22+ (running ${process.version})\n`,
    );
    mutations.skip('keeps every number exactly as JSON.parse with source text access sees it');
  } else {
    mutations('keeps every number exactly as JSON.parse with source text access sees it', () => {
      fc.assert(
        fc.property(mutated, (text) => {
          const got = parse(bytesOf(text));
          const want = oracle(text);
          if (want.valid && E.isRight(got)) assertSame(got, E.right(want.value), text);
        }),
        { numRuns: 5000 },
      );
    });
  }
}
mutations.run();
