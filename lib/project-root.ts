// The project's root folder, found from this file whether it runs from source or from the bundle.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function projectRoot(): string {
  if (root) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'db', 'migrations'))) return (root = dir);
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('project root not found');
    dir = parent;
  }
}
