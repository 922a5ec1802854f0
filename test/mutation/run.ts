// `npm run mutation [group ...]`: StrykerJS over the security-critical files, each group of files
// against the tests that guard them (the command runner runs `npm test -- <those tests>` per
// mutant, the TypeScript checker drops mutants that do not compile). Prints the score per file and
// every surviving mutant, and writes the whole result to reports/mutation/summary.json.
import fs from 'node:fs';
import path from 'node:path';
import { Stryker } from '@stryker-mutator/core';
import type { MutantResult } from '@stryker-mutator/api/core';
import { ensureTestServices } from '../support/services.ts';

interface Group {
  mutate: string[];
  tests: string[];
  /** unit tests only: run them in one process (see in-one-process.ts) */
  oneProcess?: boolean;
}

export const GROUPS: Record<string, Group> = {
  'api-key-format': {
    mutate: ['lib/api-key-format.ts'],
    tests: ['test/unit/api-key-format.test.ts', 'test/integration/api-key-checksum-refusal.test.ts'],
  },
  egress: {
    mutate: ['lib/egress.ts'],
    tests: ['test/unit/egress-address-classification.test.ts', 'test/unit/egress-guarded-fetch.test.ts', 'test/unit/egress-allowlist.test.ts', 'test/unit/egress-platform-endpoints.test.ts', 'test/unit/egress-target-checks.test.ts', 'test/unit/egress-requests-and-redirects.test.ts'],
    oneProcess: true,
  },
  // the reader (what untrusted archives meet; write-zip.ts writes the platform's own exports): names
  // and the central directory against the fast tests, the rest of the reader with inflation too
  zip: {
    mutate: ['lib/zip/entry-name.ts', 'lib/zip/central-directory.ts'],
    tests: ['test/unit/zip-central-directory.test.ts', 'test/unit/zip-entry-names.test.ts', 'test/unit/zip-limits.test.ts', 'test/unit/zip-round-trip.test.ts', 'test/unit/afps-package-archive.test.ts'],
    oneProcess: true,
  },
  'zip-inflation': {
    mutate: ['lib/zip/read-zip.ts', 'lib/zip/inflate-queue.ts', 'lib/zip/inflate-workers.ts'],
    tests: ['test/unit/zip-read-records.test.ts', 'test/unit/zip-entry-names.test.ts', 'test/unit/zip-limits.test.ts', 'test/unit/zip-round-trip.test.ts', 'test/unit/zip-inflation.test.ts', 'test/unit/afps-package-archive.test.ts'],
    oneProcess: true,
  },
  // the signature protocol against its unit tests (fast), the ingestion service against the sink's
  'run-events': {
    mutate: ['lib/run-events.ts'],
    tests: ['test/unit/run-event-signature.test.ts', 'test/unit/sidecar-event-poster.test.ts'],
    oneProcess: true,
  },
  ingestion: {
    mutate: ['api/services/runs/events.ts'],
    tests: ['test/integration/run-event-ingestion-rules.test.ts', 'test/integration/runs-event-sink.test.ts', 'test/integration/run-event-forgery-after-open.test.ts', 'test/integration/run-event-engine-signal.test.ts'],
    oneProcess: true,
  },
  finalization: {
    mutate: ['db/run-finalization.ts'],
    tests: ['test/integration/run-finalized-once-race.test.ts'],
  },
  tenancy: {
    // the tenant scope itself, then the reads and list queries of the services (their writes are
    // guarded by the same scope helpers and covered by the route matrix, not mutated here)
    mutate: ['db/tenant.ts', 'api/services/end-users.ts:67-86', 'api/services/api-keys.ts:83-96', 'api/services/runs/records.ts:104-208'],
    tests: [
      'test/unit/tenant-scope.test.ts', 'test/integration/tenant-isolation.test.ts', 'test/integration/tenant-isolation-matrix.test.ts',
      'test/integration/tenant-reads-within-a-space.test.ts', 'test/integration/run-list-totals.test.ts',
    ],
  },
};

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

function existing(files: string[]): string[] {
  return files.filter((f) => f.includes('*') || fs.existsSync(path.join(root, f)));
}

interface FileScore {
  killed: number;
  survived: number;
  timeout: number;
  noCoverage: number;
  ignored: number;
  invalid: number;
  score: number | null;
  survivors: string[];
}

function score(results: MutantResult[]): Record<string, FileScore> {
  const out: Record<string, FileScore> = {};
  for (const r of results) {
    const s = (out[r.fileName] ??= { killed: 0, survived: 0, timeout: 0, noCoverage: 0, ignored: 0, invalid: 0, score: null, survivors: [] });
    if (r.status === 'Killed') s.killed++;
    else if (r.status === 'Timeout') s.timeout++;
    else if (r.status === 'Survived') s.survived++;
    else if (r.status === 'NoCoverage') s.noCoverage++;
    else if (r.status === 'Ignored') s.ignored++;
    else s.invalid++;
    if (r.status === 'Survived' || r.status === 'NoCoverage') {
      s.survivors.push(`${r.location.start.line}:${r.location.start.column} ${r.mutatorName}: ${JSON.stringify(r.replacement ?? '')}`.slice(0, 240));
    }
  }
  for (const s of Object.values(out)) {
    const valid = s.killed + s.timeout + s.survived + s.noCoverage;
    s.score = valid ? Math.round(((s.killed + s.timeout) / valid) * 1000) / 10 : null;
  }
  return out;
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const names = wanted.length ? wanted : Object.keys(GROUPS);
  const summary: Record<string, FileScore> = {};
  const started = Date.now();
  const dir = path.join(root, 'reports', 'mutation');
  // PostgreSQL, the template database and Redis are prepared once; each mutant's test command
  // inherits their addresses instead of preparing them again.
  const services = await ensureTestServices(root);
  Object.assign(process.env, services.env, { NODE_ENV: 'test' });
  for (const name of names) {
    const named = GROUPS[name];
    if (!named) throw new Error(`no mutation group ${name}; groups: ${Object.keys(GROUPS).join(', ')}`);
    // MUTATION_MUTATE=<file:lines,...> re-checks some places (say, last run's survivors) against the
    // group's tests (or MUTATION_TESTS=<file,...>); its scores go to summary-partial.json
    const partial = process.env.MUTATION_MUTATE?.split(',').filter(Boolean);
    const tests_ = process.env.MUTATION_TESTS?.split(',').filter(Boolean);
    const group = partial?.length ? { ...named, mutate: partial, tests: tests_?.length ? tests_ : named.tests } : named;
    const tests = existing(group.tests);
    const t0 = Date.now();
    // The checker type-checks only what the group's files and tests import, not the whole project.
    const tsconfig = `tsconfig.mutation-${name}.json`;
    const mutated = group.mutate.filter((m) => !m.startsWith('!'));
    const sources = [...mutated.map((m) => m.replace(/:[\d:-]+$/, '')).filter((m) => !m.includes('*')), ...tests];
    const globs = mutated.filter((m) => m.includes('*'));
    fs.writeFileSync(path.join(root, tsconfig), JSON.stringify({ extends: './tsconfig.json', include: globs, files: sources }, null, 2));
    const stryker = new Stryker({
      mutate: group.mutate,
      testRunner: 'command',
      commandRunner: {
        command: group.oneProcess
          ? `node --import tsx --test-reporter=dot test/mutation/in-one-process.ts ${tests.join(' ')}`
          : `node --import tsx --test --test-concurrency=1 --test-reporter=dot ${tests.join(' ')}`,
      },
      checkers: ['typescript'],
      tsconfigFile: tsconfig,
      coverageAnalysis: 'off',
      concurrency: Number(process.env.MUTATION_CONCURRENCY ?? 3),
      timeoutMS: 60_000,
      reporters: ['progress'],
      // other groups' checker programs come and go while this one copies the project
      ignorePatterns: ['dist', '.data', '.test-data', '.scratch', 'reports', 'test/fixtures/build', '.stryker-tmp', 'tsconfig.mutation-*.json', `!${tsconfig}`],
      // one folder per group, so groups can run in parallel processes
      tempDirName: `.stryker-tmp/${name}`,
      cleanTempDir: 'always',
      disableTypeChecks: false,
    });
    const results = await stryker.runMutationTest().finally(() => fs.rmSync(path.join(root, tsconfig), { force: true }));
    Object.assign(summary, score(results));
    process.stdout.write(`group ${name}: ${results.length} mutants in ${Math.round((Date.now() - t0) / 1000)} s\n`);
    // written after every group, so a long run stopped part-way keeps what it measured
    // merged with what other runs (other groups, in parallel or earlier) wrote
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, partial?.length ? 'summary-partial.json' : 'summary.json');
    const earlier = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, FileScore>) : {};
    fs.writeFileSync(file, JSON.stringify({ ...earlier, ...summary }, null, 2));
  }
  process.stdout.write('\nfile | score % | killed | timeout | survived | no coverage | invalid\n');
  for (const [file, s] of Object.entries(summary)) {
    process.stdout.write(`${file} | ${s.score ?? '-'} | ${s.killed} | ${s.timeout} | ${s.survived} | ${s.noCoverage} | ${s.invalid}\n`);
  }
  for (const [file, s] of Object.entries(summary)) {
    if (s.survivors.length) process.stdout.write(`\nsurvivors in ${file}:\n  ${s.survivors.join('\n  ')}\n`);
  }
  process.stdout.write(`\nwall time ${Math.round((Date.now() - started) / 1000)} s\n`);
  await services.stop();
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
