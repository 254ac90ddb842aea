/** The Node.js lines the service runs on (as `engines` says): 24, and 26 or later; 25 and older lines are refused. */
export const SUPPORTED_NODE = '^24.0.0 || >=26.0.0';

/** Why `version` (`20.20.2`, or `v20.20.2`) cannot run the service, or undefined when it can. */
export const nodeVersionProblem = (version: string): string | undefined => {
  const m = /^v?(\d+)\.(\d+)\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/.exec(version);
  const major = Number(m?.[1]);
  const minor = Number(m?.[2]);
  const supported = m !== null && minor >= 0 && (major === 24 || major >= 26);
  return supported
    ? undefined
    : `Node.js ${version} is not supported: Plant Store needs Node.js ${SUPPORTED_NODE} (production: 26 LTS)`;
};
