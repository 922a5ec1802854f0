// Generates the SDK's types from an instance's OpenAPI document: src/generated/schema.ts
// (openapi-typescript) and src/generated/operations.ts (the operations honouring Idempotency-Key).
// The document comes from OPENAPI_URL (default http://127.0.0.1:3000/api/openapi.json) or a file
// named as the first argument.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { idempotentOperationsOf } from '../src/core.ts';

/** Writes the generated files for this document text into dir. */
export async function generate(documentText: string, dir: string): Promise<void> {
  const document = JSON.parse(documentText);
  mkdirSync(dir, { recursive: true });
  const header = `// Generated from the OpenAPI document of version ${document.info?.version}; do not edit.\n`;
  writeFileSync(`${dir}/schema.ts`, header + astToString(await openapiTS(documentText)));
  const ops = idempotentOperationsOf(document);
  writeFileSync(`${dir}/operations.ts`, `${header}export const IDEMPOTENT_OPERATIONS: readonly string[] = ${JSON.stringify(ops, null, 2)};\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const source = process.argv[2];
  const text = source
    ? readFileSync(source, 'utf8')
    : await (await fetch(process.env.OPENAPI_URL ?? 'http://127.0.0.1:3000/api/openapi.json')).text();
  await generate(text, fileURLToPath(new URL('../src/generated', import.meta.url)));
}
