import * as E from 'fp-ts/lib/Either.js';
import { isLosslessNumber, LosslessNumber } from 'lossless-json';

/**
 * The linear walks over a JSON body's text that JSON.parse does not do (see json.ts): the pre-scan that bounds it
 * before anything is built, the count of members built, and the walk that puts each number's exact source back.
 */

/** A body that is not the bounded, exact JSON read here; the API's failure map (api/failures.ts) answers it. */
export type MalformedBody = { readonly _tag: 'MalformedBody'; readonly reason: string };

export interface JsonLimits {
  /** Deepest nesting of objects and arrays; the body's own object is depth 1. */
  readonly maxDepth: number;
  /** Object members plus array elements, counted over the whole document. */
  readonly maxValues: number;
}

export const malformed = (reason: string): E.Either<MalformedBody, never> => E.left({ _tag: 'MalformedBody', reason });

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * One pass over the bytes, before anything is built: the depth of nesting and the number of members and elements,
 * stopping at the first bound crossed. It tells strings (skipped) from structure and does not validate: JSON.parse
 * does that next. In valid JSON every member has one ':' and, in each non-empty object or array, the members or
 * elements are its commas plus one.
 */
export const measure = (
  bytes: Uint8Array,
  limits: JsonLimits,
): E.Either<MalformedBody, { readonly members: number }> => {
  let depth = 0;
  let values = 0;
  let members = 0;
  let opened = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    if (opened) {
      opened = false;
      if (b !== CLOSE_BRACE && b !== CLOSE_BRACKET) values++;
    }
    if (b === QUOTE) {
      // Skip the string: an escaped character never ends it (each escape is skipped whole, so this stays linear).
      for (i++; i < bytes.length; i++) {
        const c = bytes[i] as number;
        if (c === QUOTE) break;
        if (c === BACKSLASH) i++;
      }
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > limits.maxDepth)
        return malformed(`must not nest objects and arrays more than ${limits.maxDepth} deep`);
      opened = true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--;
    else if (b === COMMA) values++;
    else if (b === COLON) members++;
    if (values > limits.maxValues) {
      return malformed(`must have at most ${limits.maxValues} object members and array elements in total`);
    }
  }
  return E.right({ members });
};

/** Members of every object in a parsed value (numbers already LosslessNumbers or still plain numbers). */
export const countMembers = (root: unknown): number => {
  let count = 0;
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null || isLosslessNumber(value)) continue;
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) pending.push(item);
    } else {
      const object = value as Record<string, unknown>;
      const keys = Object.keys(object);
      count += keys.length;
      for (const key of keys) pending.push(object[key]);
    }
  }
  return count;
};

/** Replaces a member or element that JSON.parse made; `__proto__` is redefined as the own member it is. */
const put = (holder: Record<string, unknown> | unknown[], slot: string | number, value: unknown): void => {
  if (slot === '__proto__') {
    Object.defineProperty(holder, slot, { value, writable: true, enumerable: true, configurable: true });
  } else (holder as Record<string | number, unknown>)[slot] = value;
};

const isNumberStart = (c: number): boolean => c === 0x2d || (c >= 0x30 && c <= 0x39);
const isNumberPart = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;

/**
 * Walks `text` (valid JSON, no duplicate member, and `root` is what JSON.parse made of it) alongside `root`,
 * replacing each number by a LosslessNumber of its source text. Linear: one pass, each member name read once
 * (through JSON.parse only when it holds an escape).
 */
export const restoreNumbers = (text: string, root: unknown): unknown => {
  const containers: Array<Record<string, unknown> | unknown[]> = [];
  const slots: Array<string | number> = [];
  let result = root;
  let expectName = false;
  const current = (): unknown => {
    const top = containers.length - 1;
    return top < 0 ? root : (containers[top] as Record<string | number, unknown>)[slots[top] as string | number];
  };
  for (let i = 0; i < text.length;) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      for (; end < text.length; end++) {
        const d = text.charCodeAt(end);
        if (d === QUOTE) break;
        if (d === BACKSLASH) end++;
      }
      if (expectName) {
        const raw = text.slice(i + 1, end);
        slots[slots.length - 1] = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        expectName = false;
      }
      i = end + 1;
    } else if (isNumberStart(c)) {
      let end = i + 1;
      while (end < text.length && isNumberPart(text.charCodeAt(end))) end++;
      const number = new LosslessNumber(text.slice(i, end));
      const top = containers.length - 1;
      if (top < 0) result = number;
      else put(containers[top] as Record<string, unknown>, slots[top] as string | number, number);
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      containers.push(current() as Record<string, unknown> | unknown[]);
      slots.push(c === OPEN_BRACKET ? 0 : '');
      expectName = c === OPEN_BRACE;
      i++;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      containers.pop();
      slots.pop();
      expectName = false;
      i++;
    } else if (c === COMMA) {
      const top = slots.length - 1;
      if (typeof slots[top] === 'number') slots[top] = slots[top] + 1;
      else expectName = true;
      i++;
    } else i++; // whitespace, ':', and the letters of true, false and null
  }
  return result;
};
