import { nodeVersionProblem } from './node-version.js';

/**
 * Imported first by every entry point (main.ts, token-cli.ts), and run on its own by `npm start` and `npm run token`
 * before them: on an unsupported Node.js it prints one line and exits 1 before anything else runs. (Imported, it runs
 * before the entry point's other modules are evaluated; a Node.js too old to even link them, below 20.12, is stopped
 * by the npm scripts' own run of this file.)
 */
const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
