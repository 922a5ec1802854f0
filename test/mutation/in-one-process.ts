// Runs unit test files in one process (node's runner starts the tests a module registers when
// it is run directly), so a mutant pays one start-up instead of one per file. A failing test sets
// the exit code. Only for files whose tests share no global state.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

for (const file of process.argv.slice(2)) await import(pathToFileURL(path.resolve(file)).href);
