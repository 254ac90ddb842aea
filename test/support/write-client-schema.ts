// `npm run client:schema`: writes client/src/schema.ts from the document a service started here serves.
import { writeFileSync } from 'node:fs';
import { clientSchema, schemaPath } from './client-schema.js';
import { startService } from './http.js';

const svc = await startService();
try {
  writeFileSync(schemaPath, await clientSchema(new URL('/openapi.json', svc.base)));
  process.stdout.write(`wrote ${schemaPath}\n`);
} finally {
  await svc.close();
}
