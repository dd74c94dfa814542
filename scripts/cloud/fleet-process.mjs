// A fleet replica as a real process (fleet/dist/main.js) for `npm run cloud`, the e2e spec and
// the bench: its config file written beside its data, started through `setpriv --pdeathsig` (it
// dies with its parent, also after kill -9), ready once it answers HTTPS.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
export const FLEET_MAIN = join(root, 'fleet/dist/main.js');

/**
 * A replica's FleetConfig (fleet/src/context.ts) on 127.0.0.1:<port>; replicas given the same
 * `data` share its certificate and secrets.
 */
export function fleetConfig({
  index = 0,
  port,
  host = '127.0.0.1',
  data,
  database,
  nats,
  turn = null,
  smtp,
  replica,
}) {
  return {
    replica: replica ?? `fleet-${String.fromCharCode(97 + index)}-${port}`,
    publicUrl: `https://${host}:${port}`,
    host,
    port,
    tls: { cert: join(data, 'tls', 'cert.pem'), key: join(data, 'tls', 'key.pem') },
    database,
    nats,
    turn,
    smtp: {
      host: smtp.host ?? '127.0.0.1',
      port: smtp.port,
      secure: false,
      from: smtp.from ?? 'fleet@localhost',
    },
    data,
  };
}

/** One HTTPS request to the replica; resolves the status, or null when it does not answer. */
function probe(url) {
  return new Promise((res) => {
    const req = request(`${url}/`, { method: 'GET', rejectUnauthorized: false, timeout: 2_000 });
    req.once('response', (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => res(null));
    req.end();
  });
}

/**
 * Starts a replica with `config` (written to <data>/<replica>.json) and waits until it answers
 * HTTPS (`timeoutMs`). Returns { url, config, pid, exited, log(), stop(), kill(signal) }:
 * `exited` resolves with the exit code or signal; stop() is SIGTERM, SIGKILL after 10 s.
 */
export async function startFleet(config, { echo = false, env, timeoutMs = 30_000 } = {}) {
  mkdirSync(config.data, { recursive: true, mode: 0o700 });
  const file = join(config.data, `${config.replica}.json`);
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  const child = spawn(
    'setpriv',
    ['--pdeathsig', 'SIGKILL', '--', process.execPath, FLEET_MAIN, '--config', file],
    { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env, cwd: root },
  );
  let out = '';
  const keep = (b) => {
    out = (out + b.toString()).slice(-65536);
    if (echo) process.stderr.write(`[${config.replica}] ${b}`);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((res) => child.once('exit', (code, sig) => res(sig ?? code)));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const fleet = {
    url: config.publicUrl,
    config,
    pid: child.pid,
    exited,
    log: () => out,
    async kill(signal = 'SIGKILL') {
      if (gone) return;
      child.kill(signal);
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
    stop: () => fleet.kill('SIGTERM'),
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gone) throw new Error(`fleet ${config.replica} exited at start:\n${out.slice(-3000)}`);
    if ((await probe(config.publicUrl)) !== null) return fleet;
    if (Date.now() > deadline) {
      await fleet.stop();
      throw new Error(`fleet ${config.replica} did not answer within ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}
