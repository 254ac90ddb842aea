import * as E from 'fp-ts/lib/Either.js';
import { int64FromDecimal, int64FromJsonNumber, isInt64, type Int64Reading } from './int64.js';
import type { FieldRuleBroken } from './errors.js';

/** Nominal typing: a value of a branded type has passed its smart constructor. */
declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

/**
 * The fields of a plant beside its id, in the order they are checked and shown, each a text of 1 to `max` code points
 * under `textRule`; `example` is what the API's documentation shows. Everything that lists a plant's fields derives
 * from this record, so a new field is one line here (docs/architecture.md, "Adding a plant field").
 */
export const PLANT_FIELDS = {
  name: { required: true, max: 200, example: 'Monstera' },
  tag: { required: false, max: 100, example: 'indoor' },
} as const satisfies Record<string, { readonly required: boolean; readonly max: number; readonly example: string }>;

type Fields = typeof PLANT_FIELDS;
export type PlantField = keyof Fields;
/** The fields in their order. */
export const PLANT_FIELD_NAMES = Object.keys(PLANT_FIELDS) as readonly PlantField[];

/** A plant's identifier: an exact int64, unique per owner. */
export type PlantId = Brand<bigint, 'PlantId'>;
/** A checked value of the field `K`: 1 to `PLANT_FIELDS[K].max` code points, not blank, no control characters. */
export type PlantText<K extends PlantField> = Brand<string, `Plant.${K}`>;
export type PlantName = PlantText<'name'>;
/** The tenant a principal acts for; every plant belongs to exactly one owner. */
export type Owner = Brand<string, 'Owner'>;

type RequiredFields = { readonly [K in PlantField as Fields[K]['required'] extends true ? K : never]: PlantText<K> };
type OptionalFields = { readonly [K in PlantField as Fields[K]['required'] extends true ? never : K]?: PlantText<K> };
export type Plant = { readonly id: PlantId } & RequiredFields & OptionalFields;

const broken = (field: string, rule: string): FieldRuleBroken => ({ _tag: 'FieldRuleBroken', field, rule });

const ID_RULE = 'must be an integer from -9223372036854775808 to 9223372036854775807';

const idFromReading = (field: string, reading: Int64Reading): E.Either<FieldRuleBroken, PlantId> =>
  reading._tag === 'Int64' ? E.right(reading.value as PlantId) : E.left(broken(field, ID_RULE));

export const PlantId = {
  rule: ID_RULE,
  fromBigInt: (field: string, n: bigint): E.Either<FieldRuleBroken, PlantId> =>
    isInt64(n) ? E.right(n as PlantId) : E.left(broken(field, ID_RULE)),
  /** From a JSON number's source text; `7.0` and `7e0` are the integer 7. */
  fromJsonNumber: (field: string, text: string) => idFromReading(field, int64FromJsonNumber(text)),
  /** From a plain decimal (a path segment): optional `-`, 1 to 19 digits. */
  fromDecimal: (field: string, text: string) => idFromReading(field, int64FromDecimal(text)),
} as const;

const NON_BLANK = /\S/u;
// C0 and DEL only: the contract names no other control characters.
// eslint-disable-next-line no-control-regex -- matching control characters is this expression's purpose
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether the text holds a control character (the rule of plant fields, owners and subjects alike). */
export const hasControlCharacter = (s: string): boolean => CONTROL.test(s);

const countCodePoints = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** The text rule of every plant field; a lone surrogate is refused too, as UTF-8 cannot carry it. */
const textRule =
  <K extends PlantField>(max: number) =>
  (field: string, s: string): E.Either<FieldRuleBroken, PlantText<K>> => {
    // Past 2 * max UTF-16 units the text is too long without counting: no check reads more, whatever its size.
    const length = s.length > 2 * max ? max + 1 : countCodePoints(s);
    if (length < 1 || length > max) return E.left(broken(field, `must be 1 to ${max} characters`));
    if (hasControlCharacter(s)) return E.left(broken(field, 'must not contain control characters'));
    if (!NON_BLANK.test(s)) return E.left(broken(field, 'must contain a non-whitespace character'));
    if (!s.isWellFormed()) return E.left(broken(field, 'must be well-formed Unicode (no lone surrogates)'));
    return E.right(s as PlantText<K>);
  };

/** Each field's rule: `PlantText.name('name', s)` is the checked name, or the rule it breaks. */
export const PlantText = Object.fromEntries(PLANT_FIELD_NAMES.map((k) => [k, textRule(PLANT_FIELDS[k].max)])) as {
  readonly [K in PlantField]: (field: string, s: string) => E.Either<FieldRuleBroken, PlantText<K>>;
};

export const Owner = {
  /** Owners come from trusted principals; the rule only keeps empty and oversized keys out of every store. */
  from: (s: string): E.Either<FieldRuleBroken, Owner> =>
    s.length >= 1 && s.length <= 256 && !hasControlCharacter(s) && s.isWellFormed()
      ? E.right(s as Owner)
      : E.left(broken('owner', 'must be 1 to 256 characters without control characters')),
} as const;

/** A retried create is safe: the same id with the same value in every field is the same plant. */
export const samePlant = (a: Plant, b: Plant): boolean => {
  if (a.id !== b.id) return false;
  for (const k of PLANT_FIELD_NAMES) if (a[k] !== b[k]) return false;
  return true;
};

/** What `plant` takes: checked fields, an optional one absent or undefined. */
export type PlantFields = { readonly id: PlantId } & { readonly [K in PlantField]?: PlantText<K> | undefined };

/** A plant of checked fields, the required ones present, in the fields' order; an absent field is left out. */
export const plant = (fields: PlantFields): Plant => {
  const made: Record<string, unknown> = { id: fields.id };
  for (const k of PLANT_FIELD_NAMES) if (fields[k] !== undefined) made[k] = fields[k];
  return made as Plant;
};

/** Ascending order by id, exact over the whole int64 range. */
export const compareIds = (a: PlantId, b: PlantId): number => (a < b ? -1 : a > b ? 1 : 0);
