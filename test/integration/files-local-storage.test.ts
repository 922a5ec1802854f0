// The files suite over local storage (DATA_DIR/files, the default).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { filesSuite } from './files-suite.ts';

filesSuite(async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'files-local-'));
  return {
    env: { DATA_DIR: dataDir },
    exists: async (key) => existsSync(path.join(dataDir, 'files', key)),
    stop: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
});
