/** Exact signed 64-bit integers as bigint, read from decimal text without passing through a number. */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export const isInt64 = (n: bigint): boolean => n >= INT64_MIN && n <= INT64_MAX;

/** Result of reading a decimal text: the integer, or why it is not an int64. */
export type Int64Reading =
  | { readonly _tag: 'Int64'; readonly value: bigint }
  | { readonly _tag: 'NotAnInteger' }
  | { readonly _tag: 'OutOfRange' };

const notAnInteger: Int64Reading = { _tag: 'NotAnInteger' };
const outOfRange: Int64Reading = { _tag: 'OutOfRange' };

const inRange = (value: bigint): Int64Reading => (isInt64(value) ? { _tag: 'Int64', value } : outOfRange);

const JSON_NUMBER = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
/** 19 digits hold every int64; more significant digits than that (after trimming zeros) cannot be in range. */
const MAX_DIGITS = 19;
const ZERO = 0x30;

/** A JSON number's source text as an exact integer (`7.0`, `70e-1` are 7); a hostile exponent costs nothing. */
export const int64FromJsonNumber = (text: string): Int64Reading => {
  const m = JSON_NUMBER.exec(text);
  if (m === null) return notAnInteger;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = m;
  // Significant digits are digits[first..last]; found by index, never by a regex such as /0+$/ (which backtracks
  // quadratically over a long run of zeros that is not at the end).
  const digits = whole + fraction;
  let first = 0;
  while (first < digits.length && digits.charCodeAt(first) === ZERO) first++;
  if (first === digits.length) return { _tag: 'Int64', value: 0n };
  let last = digits.length - 1;
  while (digits.charCodeAt(last) === ZERO) last--;
  const significant = last - first + 1;
  const scale = Number(exponent) - fraction.length + (digits.length - 1 - last); // value = significant * 10^scale
  if (scale < 0) return notAnInteger;
  if (significant + scale > MAX_DIGITS) return outOfRange;
  return inRange(BigInt(sign + digits.slice(first, last + 1) + '0'.repeat(scale)));
};

const DECIMAL_INT64 = /^-?[0-9]{1,19}$/;

/** Reads a plain decimal integer (optional leading `-`, 1 to 19 digits), as in a URL path. */
export const int64FromDecimal = (text: string): Int64Reading =>
  DECIMAL_INT64.test(text) ? inRange(BigInt(text)) : notAnInteger;
