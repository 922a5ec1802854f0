// Reads the reset links a development or test instance without mail writes to its data directory
// (DATA_DIR/reset-links.log, one JSON line {at, to, link}). Test apps of every file share the
// default data directory, so a link counts only when its token is pending in this app's database.
import { promises as fsp } from 'node:fs';
import type pg from 'pg';
import { sha256Hex } from '../../lib/crypto.ts';
import { resetLinkFileOf } from '../../lib/mail.ts';
import type { Config } from '../../lib/config.ts';

export interface ResetLinkEntry { at: string; to: string; link: string }

export async function readResetLinks(file: string): Promise<ResetLinkEntry[]> {
  const text = await fsp.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  return text.split('\n').filter(Boolean).flatMap((line) => {
    try {
      return [JSON.parse(line) as ResetLinkEntry];
    } catch {
      return []; // a line still being appended by another process
    }
  });
}

/**
 * The newest link to `email` whose token is pending in this app's database and not in `except`,
 * waiting (up to `ms`) until the app has written it. Returns the link's URL and token.
 */
export async function resetLinkFor(
  app: { deps: { config: Config; database: { pool: pg.Pool } } },
  email: string,
  opts: { except?: string[]; ms?: number } = {},
): Promise<{ url: URL; token: string }> {
  const file = resetLinkFileOf(app.deps.config);
  if (!file) throw new Error('this app keeps no reset-link file (mail enabled, or production)');
  const deadline = Date.now() + (opts.ms ?? 10_000);
  for (;;) {
    const mine = (await readResetLinks(file)).filter((e) => e.to.toLowerCase() === email.toLowerCase()).reverse();
    for (const entry of mine) {
      const url = new URL(entry.link);
      const token = url.searchParams.get('token') ?? '';
      if (opts.except?.includes(token)) continue;
      const { rowCount } = await app.deps.database.pool.query('SELECT 1 FROM password_resets WHERE token_hash = $1', [sha256Hex(token)]);
      if (rowCount) return { url, token };
    }
    if (Date.now() > deadline) throw new Error(`no pending reset link for ${email} in ${file}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
