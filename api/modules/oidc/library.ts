// oidc-provider, loaded once. On loading it warns "Unsupported runtime" on any Node older than 22
// LTS; this platform supports Node 20 (>= 20.19) too, and runs its OIDC tests there (CI), so on
// Node 20 that one notice is dropped; any other warning of the library still reaches stderr.
const UNSUPPORTED = 'Unsupported runtime. Use Node.js v22.x LTS';
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

let library: Promise<typeof import('oidc-provider')> | undefined;

export function loadOidcProvider(): Promise<typeof import('oidc-provider')> {
  library ??= (async () => {
    const warn = console.warn;
    if (NODE_MAJOR === 20) {
      console.warn = (...args: unknown[]) => {
        if (typeof args[0] === 'string' && args[0].includes(UNSUPPORTED)) return;
        warn(...args);
      };
    }
    try {
      return await import('oidc-provider');
    } finally {
      console.warn = warn;
    }
  })();
  return library;
}
