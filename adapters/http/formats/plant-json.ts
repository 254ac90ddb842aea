import type { Plant } from '../../../domain/plant.js';

/**
 * The characters JSON.stringify would not copy as they are: a quote, a backslash, U+0000 to U+001F, and surrogates
 * (a lone one is escaped; a pair is copied, but it is left to JSON.stringify to tell them apart).
 */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A JSON string literal, exactly as JSON.stringify writes it. Names and tags rarely hold anything it would change
 * (the domain refuses control characters and lone surrogates), so they are quoted as they are after one scan, and
 * only the others go through JSON.stringify: a page of 20 plants costs about 60% of a JSON.stringify per string.
 */
const quoted = (s: string): string => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

/** The Plant shape of the contract: `name`, and `tag` when present; never the id. */
export const plantJson = (p: Plant): string =>
  p.tag === undefined ? `{"name":${quoted(p.name)}}` : `{"name":${quoted(p.name)},"tag":${quoted(p.tag)}}`;

export const plantsJson = (plants: readonly Plant[]): string => {
  let out = '[';
  for (let i = 0; i < plants.length; i++) {
    if (i > 0) out += ',';
    out += plantJson(plants[i] as Plant);
  }
  return out + ']';
};
