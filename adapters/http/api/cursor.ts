import * as E from 'fp-ts/lib/Either.js';
import { PlantId } from '../../../domain/plant.js';

/**
 * The opaque `cursor` of a next link: base64url (no padding) of "1:" and the last id served. Only the canonical
 * encoding of a canonical int64 is accepted, so any other string (malformed, tampered, re-encoded) is refused.
 * It carries no owner: every page is read inside the caller's own owner, so a cursor can only move within it.
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
