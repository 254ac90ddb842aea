import * as E from 'fp-ts/lib/Either.js';
import { int64FromDecimal, int64FromJsonNumber, isInt64, type Int64Reading } from './int64.js';
import type { FieldRuleBroken } from './errors.js';
import { hasControlCharacter } from './text.js';

/** Nominal typing: a value of a branded type has passed its smart constructor. */
declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

/** A plant's identifier: an exact int64, unique per owner. */
export type PlantId = Brand<bigint, 'PlantId'>;
/** 1 to 200 code points, not blank, no control characters. */
export type PlantName = Brand<string, 'PlantName'>;
/** 1 to 100 code points, not blank, no control characters. */
export type PlantTag = Brand<string, 'PlantTag'>;
/** The tenant a principal acts for; every plant belongs to exactly one owner. */
export type Owner = Brand<string, 'Owner'>;

export interface Plant {
  readonly id: PlantId;
  readonly name: PlantName;
  readonly tag?: PlantTag;
}

export const NAME_MAX = 200;
export const TAG_MAX = 100;

const broken = (field: string, rule: string): FieldRuleBroken => ({ _tag: 'FieldRuleBroken', field, rule });

const ID_RULE = 'must be an integer from -9223372036854775808 to 9223372036854775807';

const idFromReading =
  (field: string) =>
  (reading: Int64Reading): E.Either<FieldRuleBroken, PlantId> =>
    reading._tag === 'Int64' ? E.right(reading.value as PlantId) : E.left(broken(field, ID_RULE));

export const PlantId = {
  rule: ID_RULE,
  fromBigInt: (field: string, n: bigint): E.Either<FieldRuleBroken, PlantId> =>
    isInt64(n) ? E.right(n as PlantId) : E.left(broken(field, ID_RULE)),
  /** From a JSON number's source text; `7.0` and `7e0` are the integer 7. */
  fromJsonNumber: (field: string, text: string) => idFromReading(field)(int64FromJsonNumber(text)),
  /** From a plain decimal (a path segment): optional `-`, 1 to 19 digits. */
  fromDecimal: (field: string, text: string) => idFromReading(field)(int64FromDecimal(text)),
} as const;

const NON_BLANK = /\S/u;

const countCodePoints = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/**
 * The shared text rule of name and tag. A lone UTF-16 surrogate is refused too: it is not a Unicode scalar value,
 * UTF-8 (the wire and every store) cannot carry it, and it would come back changed.
 */
const text =
  <B extends string>(max: number) =>
  (field: string, s: string): E.Either<FieldRuleBroken, Brand<string, B>> => {
    // A code point is one or two UTF-16 units: past 2 * max units the text is too long without counting, so
    // every check below reads at most 2 * max units, whatever the size of the string.
    const length = s.length > 2 * max ? max + 1 : countCodePoints(s);
    if (length < 1 || length > max) return E.left(broken(field, `must be 1 to ${max} characters`));
    if (hasControlCharacter(s)) return E.left(broken(field, 'must not contain control characters'));
    if (!NON_BLANK.test(s)) return E.left(broken(field, 'must contain a non-whitespace character'));
    if (!s.isWellFormed()) return E.left(broken(field, 'must be well-formed Unicode (no lone surrogates)'));
    return E.right(s as Brand<string, B>);
  };

export const PlantName = { max: NAME_MAX, from: text<'PlantName'>(NAME_MAX) } as const;
export const PlantTag = { max: TAG_MAX, from: text<'PlantTag'>(TAG_MAX) } as const;

export const Owner = {
  /** Owners come from trusted principals; the rule only keeps empty and oversized keys out of every store. */
  from: (s: string): E.Either<FieldRuleBroken, Owner> =>
    s.length >= 1 && s.length <= 256 && !hasControlCharacter(s) && s.isWellFormed()
      ? E.right(s as Owner)
      : E.left(broken('owner', 'must be 1 to 256 characters without control characters')),
} as const;

/** A retried create is safe: the same id with the same name and tag is the same plant. */
export const samePlant = (a: Plant, b: Plant): boolean => a.id === b.id && a.name === b.name && a.tag === b.tag;

/** A plant of checked fields; an absent tag is left out, not kept as undefined. */
export const plant = ({ id, name, tag }: { id: PlantId; name: PlantName; tag?: PlantTag | undefined }): Plant =>
  tag === undefined ? { id, name } : { id, name, tag };

/** Ascending order by id, exact over the whole int64 range. */
export const compareIds = (a: PlantId, b: PlantId): number => (a < b ? -1 : a > b ? 1 : 0);
