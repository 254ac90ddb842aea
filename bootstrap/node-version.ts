/**
 * The Node.js versions the service runs on; `engines` in package.json says the same (a test checks it). 20 from 20.19
 * works (its end of life was April 2026: do not deploy on it), 22 from 22.12 and 24 are the LTS lines (production:
 * 24), and later releases are let through. 21 and 23 (short-lived odd lines, past their end of life), older releases
 * of 20 and 22, and anything older are refused.
 */
export const SUPPORTED_NODE = '^20.19.0 || ^22.12.0 || >=24.0.0';

/**
 * Why `version` (as in `process.versions.node`: `20.20.2`, a leading `v` allowed) cannot run the service, or undefined
 * when it can. A version that cannot be read is refused too.
 */
export const nodeVersionProblem = (version: string): string | undefined => {
  const m = /^v?(\d+)\.(\d+)\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/.exec(version);
  const major = Number(m?.[1]);
  const minor = Number(m?.[2]);
  const supported = m !== null && (major >= 24 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19));
  return supported
    ? undefined
    : `Node.js ${version} is not supported: Plant Store needs Node.js ${SUPPORTED_NODE} (production: 24 LTS)`;
};
