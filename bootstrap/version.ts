import { readFileSync } from 'node:fs';
import * as E from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';

const Manifest = t.type({ version: t.string });

/** package.json's `version`, or `unknown` when it cannot be read: a label never stops the start. */
export const serviceVersion = (manifest: URL = new URL('../../package.json', import.meta.url)): string => {
  try {
    const decoded = Manifest.decode(JSON.parse(readFileSync(manifest, 'utf8')));
    return E.isRight(decoded) && /^[0-9A-Za-z.+-]{1,64}$/.test(decoded.right.version)
      ? decoded.right.version
      : 'unknown';
  } catch {
    return 'unknown';
  }
};
