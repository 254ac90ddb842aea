import * as E from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import { isLosslessNumber } from 'lossless-json';
import type { FieldRuleBroken } from '../../../domain/errors.js';
import { INT64_MAX, INT64_MIN } from '../../../domain/int64.js';
import {
  PLANT_FIELDS,
  PLANT_FIELD_NAMES,
  PlantId,
  PlantText,
  plant,
  type Plant,
  type PlantField,
} from '../../../domain/plant.js';
import type { ListPlantsQuery } from '../../../application/use-cases/list-plants.js';

/**
 * io-ts codecs for every input of the HTTP edge (a create's body, a list's query, a path's id), and plants as JSON.
 * Each field codec delegates its rule to the domain's smart constructor and only adds the JSON shape and the name.
 */

/** A codec for one field: `read` turns the raw value into the domain value or says which rule it broke. */
const field = <A>(name: string, read: (key: string, u: unknown) => E.Either<FieldRuleBroken | string, A>) =>
  new t.Type<A, unknown, unknown>(
    name,
    (u): u is A => E.isRight(read(name, u)),
    (u, c) => {
      const result = read(c[c.length - 1]?.key || 'body', u);
      return E.isLeft(result)
        ? t.failure(u, c, typeof result.left === 'string' ? result.left : result.left.rule)
        : t.success(result.right);
    },
    (a) => a,
  );

/** `"7"` is the mistake a JavaScript client makes to keep a big id exact: the message says how to send it instead. */
const ID_AS_STRING = `must be a JSON number, not a string: write 7, not "7" (an integer from ${INT64_MIN} to ${INT64_MAX}, all its digits kept exactly)`;

const IdFromJsonNumber = field('PlantId', (key, u) => {
  if (u === undefined) return E.left('is required');
  if (typeof u === 'string') return E.left(ID_AS_STRING);
  return isLosslessNumber(u) ? PlantId.fromJsonNumber(key, u.value) : E.left(PlantId.rule);
});

/**
 * A plant field's codec. An optional field may be absent but not null (the contract): many serializers write null for
 * an unset field (pydantic, Jackson, System.Text.Json), so the message says what to send instead.
 */
const textField = <K extends PlantField>(k: K) => {
  const { required, max } = PLANT_FIELDS[k];
  const rule = PlantText[k];
  const notString = `must be a string of 1 to ${max} characters`;
  const nullRule = required
    ? `${notString}, not null`
    : `must be left out when there is none, not null (or be a string of 1 to ${max} characters)`;
  return field<PlantText<K> | undefined>(k, (key, u) =>
    u === undefined
      ? required
        ? E.left('is required')
        : E.right(undefined)
      : u === null
        ? E.left(nullRule)
        : typeof u === 'string'
          ? rule(key, u)
          : E.left(notString),
  );
};

/** `id` and the plant's fields, checked in that order; other members are ignored and not kept. */
const NewPlantMembers = t.type({
  id: IdFromJsonNumber,
  ...(Object.fromEntries(PLANT_FIELD_NAMES.map((k) => [k, textField(k)])) as {
    readonly [K in PlantField]: ReturnType<typeof textField<K>>;
  }),
});

/** The first problem, as "field: rule". */
const describe = (errors: t.Errors): FieldRuleBroken => {
  const first = errors[0];
  if (first === undefined) return { _tag: 'FieldRuleBroken', field: 'body', rule: 'is not valid' };
  const path = first.context.map((entry) => entry.key).filter((key) => key !== '' && !/^[0-9]+$/.test(key));
  const fieldName = path.join('.') || 'body';
  return {
    _tag: 'FieldRuleBroken',
    field: fieldName,
    rule: first.message ?? (fieldName === 'body' ? 'must be a JSON object' : 'is not valid'),
  };
};

const NEW_PLANT_MEMBERS = Object.keys(NewPlantMembers.props);

/** Only the codec's own members go on, in a fresh object: io-ts would make an own `__proto__` member a prototype. */
export const decodeNewPlant = (body: unknown): E.Either<FieldRuleBroken, Plant> => {
  // lossless-json yields plain objects for JSON objects; arrays, strings and LosslessNumbers are not.
  if (typeof body !== 'object' || body === null || Object.getPrototypeOf(body) !== Object.prototype) {
    return E.left({ _tag: 'FieldRuleBroken', field: 'body', rule: 'must be a JSON object' });
  }
  const picked: Record<string, unknown> = {};
  for (const key of NEW_PLANT_MEMBERS)
    if (Object.hasOwn(body, key)) picked[key] = (body as Record<string, unknown>)[key];
  return E.bimap(describe, plant)(NewPlantMembers.decode(picked));
};

/**
 * The opaque `cursor` of a next link: unpadded base64url of "1:" and the last id served; only the canonical encoding of
 * a canonical int64 is accepted. It carries no owner: a page is read inside the caller's own, whatever the cursor.
 */
const VERSION = '1:';
const CANONICAL_ID = /^(0|-?[1-9][0-9]{0,18})$/;
const RULE = 'must be a cursor taken from a next link';

export const encodeCursor = (after: PlantId): string => Buffer.from(VERSION + after.toString()).toString('base64url');

export const decodeCursor = (cursor: string): E.Either<string, PlantId> => {
  if (cursor.length === 0 || cursor.length > 40 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return E.left(RULE);
  const bytes = Buffer.from(cursor, 'base64url');
  if (bytes.toString('base64url') !== cursor) return E.left(RULE);
  const text = bytes.toString('latin1');
  if (!text.startsWith(VERSION)) return E.left(RULE);
  const digits = text.slice(VERSION.length);
  if (!CANONICAL_ID.test(digits)) return E.left(RULE);
  return E.mapLeft(() => RULE)(PlantId.fromDecimal('cursor', digits));
};

/** A query parameter: absent, or given exactly once. */
const once = (u: unknown): E.Either<FieldRuleBroken | string, string | undefined> =>
  u === undefined || typeof u === 'string' ? E.right(u) : E.left('must be given at most once');

const INT32_MAX = 2147483647;
const LIMIT_RULE = `must be an integer from 1 to ${INT32_MAX}`;

const LimitParam = field<number | undefined>('limit', (_key, u) => {
  const given = once(u);
  if (E.isLeft(given)) return given;
  if (given.right === undefined) return E.right(undefined);
  if (!/^[0-9]{1,10}$/.test(given.right)) return E.left(LIMIT_RULE);
  const n = Number(given.right);
  return n >= 1 && n <= INT32_MAX ? E.right(n) : E.left(LIMIT_RULE);
});

const CursorParam = field<PlantId | undefined>('cursor', (_key, u) => {
  const given = once(u);
  if (E.isLeft(given)) return given;
  return given.right === undefined ? E.right(undefined) : decodeCursor(given.right);
});

/** Decodes one named input with its codec, so a failure names that input. */
const decodeNamed = <A>(
  codec: t.Type<A, unknown, unknown>,
  key: string,
  value: unknown,
): E.Either<FieldRuleBroken, A> => E.mapLeft(describe)(codec.validate(value, [{ key, type: codec, actual: value }]));

const noQuery: ListPlantsQuery = {};

const allOrNothing = (values: string[]): string | string[] | undefined =>
  values.length === 0 ? undefined : values.length === 1 ? values[0] : values;

/**
 * `limit` and `cursor` of GET /plants from the raw query string; other parameters are ignored. Every parameter is read
 * (linear, bounded by the header size limit): polka's `req.query` stops at 1000 parameters, so a `limit` after them
 * would go unseen.
 */
export const decodeListSearch = (search: string): E.Either<FieldRuleBroken, ListPlantsQuery> => {
  if (search.length <= 1) return E.right(noQuery);
  const params = new URLSearchParams(search);
  const rawLimit = allOrNothing(params.getAll('limit'));
  const rawCursor = allOrNothing(params.getAll('cursor'));
  if (rawLimit === undefined && rawCursor === undefined) return E.right(noQuery);
  const limit = decodeNamed(LimitParam, 'limit', rawLimit);
  if (E.isLeft(limit)) return limit;
  const cursor = decodeNamed(CursorParam, 'cursor', rawCursor);
  if (E.isLeft(cursor)) return cursor;
  return E.right({
    ...(limit.right === undefined ? {} : { limit: limit.right }),
    ...(cursor.right === undefined ? {} : { after: cursor.right }),
  });
};

const PathId = field('id', (key, u) => (typeof u === 'string' ? PlantId.fromDecimal(key, u) : E.left(PlantId.rule)));

/** `{id}` of /plants/{id}: a decimal int64. */
export const decodePathId = (raw: string | undefined): E.Either<FieldRuleBroken, PlantId> =>
  decodeNamed(PathId, 'id', raw);

/**
 * The Plant shape of the contract: every field, never the id (JSON.stringify leaves out an undefined one). A literal,
 * not an object rest, which V8 builds a property at a time (docs/performance.md); its type makes a field added to
 * PLANT_FIELDS and not here a type error (docs/architecture.md counts this place).
 */
const contractShape = (p: Plant): { readonly [K in PlantField]: Plant[K] } => ({ name: p.name, tag: p.tag });

export const plantJson = (p: Plant): string => JSON.stringify(contractShape(p));

/** Pushed into a packed array: `map`'s result reached JSON.stringify holey, its slow path (docs/performance.md). */
export const plantsJson = (plants: readonly Plant[]): string => {
  const shapes: Array<ReturnType<typeof contractShape>> = [];
  for (const p of plants) shapes.push(contractShape(p));
  return JSON.stringify(shapes);
};
