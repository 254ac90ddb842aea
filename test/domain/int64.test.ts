import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { INT64_MAX, INT64_MIN, int64FromDecimal, int64FromJsonNumber } from '../../domain/int64.js';

const test = suite('int64 text');
const int64 = fc.bigInt({ min: INT64_MIN, max: INT64_MAX });
const value = (text: string) => {
  const r = int64FromJsonNumber(text);
  return r._tag === 'Int64' ? r.value : r._tag;
};

test('every int64 printed in decimal reads back exactly, as a JSON number and as a path segment', () => {
  fc.assert(
    fc.property(int64, (n) => {
      assert.is(value(n.toString()), n);
      const path = int64FromDecimal(n.toString());
      assert.equal(path, { _tag: 'Int64', value: n });
    }),
    { numRuns: 2000, examples: [[INT64_MIN], [INT64_MAX], [0n], [2n ** 53n], [2n ** 53n + 1n], [-(2n ** 53n) - 1n]] },
  );
});

test('an int64 written with a zero fraction or an exponent is the same integer', () => {
  fc.assert(
    fc.property(int64, fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 3 }), (n, zeros, shift) => {
      const s = n.toString();
      assert.is(value(`${s}.${'0'.repeat(zeros)}`), n);
      assert.is(value(`${s}e0`), n);
      if (n !== 0n) {
        assert.is(value(`${s}${'0'.repeat(shift)}E-${shift}`), n);
        const digits = s.replace('-', '');
        const sign = n < 0n ? '-' : '';
        // d.ddd e+k form
        const sci = `${sign}${digits[0]}.${digits.slice(1) || '0'}e${digits.length - 1}`;
        assert.is(value(sci), n);
      }
    }),
    { numRuns: 1000 },
  );
});

test('integers beyond 2^53 stay distinct: 9007199254740993 is not 9007199254740992', () => {
  assert.is(value('9007199254740993'), 9007199254740993n);
  assert.is(value('9007199254740992'), 9007199254740992n);
  assert.is.not(value('9007199254740993'), value('9007199254740992'));
});

test('one past either end of the range is out of range', () => {
  assert.is(value((INT64_MAX + 1n).toString()), 'OutOfRange');
  assert.is(value((INT64_MIN - 1n).toString()), 'OutOfRange');
  assert.is(value('1e19'), 'OutOfRange');
  assert.is(value('9.223372036854775808e18'), 'OutOfRange');
  assert.is(value('-9.223372036854775808e18'), INT64_MIN);
  assert.equal(int64FromDecimal('9223372036854775808'), { _tag: 'OutOfRange' });
});

test('a hostile exponent is refused without building the number', () => {
  assert.is(value('1e999999999'), 'OutOfRange');
  assert.is(value('1e-999999999'), 'NotAnInteger');
  assert.is(value('0e999999999'), 0n);
});

test('fractions are not integers, however close', () => {
  fc.assert(
    fc.property(int64, fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 25 }), (n, d, zeros) => {
      assert.is(value(`${n}.${'0'.repeat(zeros)}${d}`), 'NotAnInteger');
    }),
  );
  assert.is(value('7.5'), 'NotAnInteger');
  assert.is(value('1e-1'), 'NotAnInteger');
});

test('a path segment is only optional "-" and 1 to 19 digits', () => {
  for (const bad of ['', '-', 'abc', '1.5', '+1', '0x10', '1e3', ' 1', '1 ', '12345678901234567890', '٣']) {
    assert.equal(int64FromDecimal(bad), { _tag: 'NotAnInteger' }, bad);
  }
  assert.equal(int64FromDecimal('007'), { _tag: 'Int64', value: 7n });
  assert.equal(int64FromDecimal('-0'), { _tag: 'Int64', value: 0n });
});

test.run();
