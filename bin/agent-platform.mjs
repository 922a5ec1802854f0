#!/usr/bin/env node
// The command-line client (cli/main.ts), run under plain node: tsx compiles its TypeScript on the
// fly, as it does for the platform's own scripts. `npx agent-platform ...` in the repository, or
// `agent-platform ...` once the package is installed globally.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
