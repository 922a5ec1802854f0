// A test reporter that appends, as each top-level test or suite of a file ends, its file and
// duration to the file FILE_TIMES_LOG names (one JSON line each). test/run.ts prints from it the
// test files that took longest once the run ends: where the suite's minutes go. Written as they
// come, not at the end: the runner's --test-force-exit ends the process before a final report.
import fs from 'node:fs';

export default async function* fileTimes(source) {
  const log = process.env.FILE_TIMES_LOG;
  for await (const event of source) {
    if (!log || (event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0 || !event.data.file) continue;
    try {
      fs.appendFileSync(log, `${JSON.stringify({ file: event.data.file, ms: event.data.details?.duration_ms ?? 0 })}\n`);
    } catch {
      // the log is gone (its run ended): a timing is not worth failing a test run over
    }
  }
}
