import { nodeVersionProblem } from './node-version.js';

/**
 * Imported first by every entry point, and run alone by the npm scripts before them: on an unsupported Node.js one
 * line and exit 1 (a Node.js too old to link the entry point is stopped by the scripts' own run).
 */
const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
