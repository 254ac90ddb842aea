/**
 * The Node.js versions the service runs on; `engines` in package.json says the same (a test checks it). 26 (Active LTS)
 * and 24 (Maintenance LTS) are the lines CI tests; later releases are let through. 25 (a short-lived odd line) and
 * anything older than 24 are refused.
 */
export const SUPPORTED_NODE = '^24.0.0 || >=26.0.0';

/**
 * Why `version` (as in `process.versions.node`: `20.20.2`, a leading `v` allowed) cannot run the service, or undefined
 * when it can. A version that cannot be read is refused too.
 */
export const nodeVersionProblem = (version: string): string | undefined => {
  const m = /^v?(\d+)\.(\d+)\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/.exec(version);
  const major = Number(m?.[1]);
  const minor = Number(m?.[2]);
  const supported = m !== null && minor >= 0 && (major === 24 || major >= 26);
  return supported
    ? undefined
    : `Node.js ${version} is not supported: Plant Store needs Node.js ${SUPPORTED_NODE} (production: 26 LTS)`;
};
