// A test reporter that prints, once the run ends, the test files that took longest: the sum of
// their top-level tests' and suites' durations (work in top-level hooks outside a suite is not
// counted). Where the suite's 15 minutes go.
export default async function* fileTimes(source) {
  const spent = new Map();
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0 || !event.data.file) continue;
    spent.set(event.data.file, (spent.get(event.data.file) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  const rows = [...spent].map(([file, ms]) => [file.replace(`${process.cwd()}/`, ''), ms / 1000]).sort((a, b) => b[1] - a[1]);
  const top = rows.slice(0, 20).map(([file, s]) => `  ${s.toFixed(1).padStart(6)} s  ${file}`).join('\n');
  yield `\nSlowest test files (sum of their top-level tests):\n${top}\n`;
}
