// The cloud's engines for development and tests (docs/cloud.md "Running it"): PostgreSQL 15,
// nats-server, coturn and an SMTP sink, each on loopback on a free port, stopped by stop() and
// also when this process exits. Every engine is a child of this process started through
// `setpriv --pdeathsig`, so a parent killed outright (kill -9) takes its engines with it.
import { spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export const PG_BIN = '/usr/lib/postgresql/15/bin';
/** The first of `paths` that exists (Debian puts nats-server in /usr/sbin). */
function firstOf(...paths) {
  return paths.find((p) => existsSync(p)) ?? paths[0];
}
export const NATS_BIN = firstOf('/usr/sbin/nats-server', '/usr/bin/nats-server');
export const TURN_BIN = firstOf('/usr/bin/turnserver', '/usr/sbin/turnserver');

// ---- what to clean up when this process ends --------------------------------------------------

/** Live engines: each has a synchronous `kill()` for the exit handler. */
const live = new Set();
let hooked = false;

function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllSync);
  // A signal ends the process without 'exit': clean up and re-raise, but only when nobody else
  // handles the signal (a host such as `npm run cloud` stops the engines itself, gracefully).
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    const onSignal = () => {
      if (process.listenerCount(sig) > 1) return;
      killAllSync();
      process.removeListener(sig, onSignal);
      process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

function killAllSync() {
  for (const e of [...live]) {
    try {
      e.kill();
    } catch {
      // already gone
    }
  }
  live.clear();
}

/** Stops every engine this process started (awaits each one's stop()). */
export async function stopAll() {
  await Promise.all([...live].map((e) => e.stop()));
}

/**
 * A temporary folder `<tmp>/<prefix>-<pid>-XXXXXX`, after removing those of processes that are
 * gone (a parent killed with -9 never got to remove its own).
 */
function tempDir(prefix) {
  const base = tmpdir();
  for (const name of readdirSync(base)) {
    const m = new RegExp(`^${prefix}-(\\d+)-`).exec(name);
    if (!m) continue;
    let alive = true;
    try {
      process.kill(Number(m[1]), 0);
    } catch (e) {
      alive = e.code === 'EPERM';
    }
    if (!alive) rmSync(join(base, name), { recursive: true, force: true });
  }
  return mkdtempSync(join(base, `${prefix}-${process.pid}-`));
}

// ---- ports -----------------------------------------------------------------------------------

function udpFree(port) {
  return new Promise((res) => {
    const s = createSocket('udp4');
    s.once('error', () => res(false));
    s.bind(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}

/** A loopback TCP port nobody listens on now (and, with `udp`, a free UDP port of that number). */
export async function freePort({ udp = false } = {}) {
  for (let i = 0; i < 50; i += 1) {
    const port = await new Promise((res, rej) => {
      const s = createServer();
      s.once('error', rej);
      s.listen(0, '127.0.0.1', () => {
        const p = s.address().port;
        s.close(() => res(p));
      });
    });
    if (!udp || (await udpFree(port))) return port;
  }
  throw new Error('no free port on 127.0.0.1');
}

/** Waits until something accepts TCP connections on 127.0.0.1:port. */
async function waitTcp(port, timeoutMs, child, name) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}): ${child.tail()}`);
    }
    const ok = await new Promise((res) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => {
        c.destroy();
        res(true);
      });
      c.once('error', () => res(false));
    });
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`${name} did not listen on ${port}: ${child.tail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---- children ----------------------------------------------------------------------------------

/**
 * Spawns `cmd args` as a child that dies with this process (`setpriv --pdeathsig`), optionally
 * as another user, keeping the last 8 KiB of its output for error messages (and echoing it when
 * `echo` is set).
 */
function spawnEngine(cmd, args, { user, deathSignal = 'SIGTERM', echo, name, env } = {}) {
  const priv = ['--pdeathsig', deathSignal];
  if (user) priv.push(`--reuid=${user}`, `--regid=${user}`, '--init-groups');
  const child = spawn('setpriv', [...priv, '--', cmd, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: env ?? process.env,
  });
  let out = '';
  const keep = (b) => {
    out = (out + b.toString()).slice(-8192);
    if (echo) process.stderr.write(`[${name}] ${b}`);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.tail = () => out.trim().split('\n').slice(-12).join('\n');
  child.exited = new Promise((res) => child.once('exit', res));
  return child;
}

/** Signals the child and waits for it to end; SIGKILL after `graceMs`. */
async function stopChild(child, signal, graceMs = 10_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(t);
}

function track(engine) {
  hookExit();
  live.add(engine);
  return engine;
}

// ---- PostgreSQL 15 -----------------------------------------------------------------------------

function chownTree(dir, uid, gid) {
  spawnSync('chown', ['-R', `${uid}:${gid}`, dir]);
}

function pgIds() {
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('no `postgres` user: install postgresql-15 (Debian)');
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/**
 * Starts PostgreSQL 15 on 127.0.0.1:<free port> with its data in `dir` (initdb at first use, as
 * the unprivileged `postgres` user: initdb refuses root). Without `dir` a temporary folder is
 * used and removed by stop(). Creates database `db` (default `fleet`) unless it exists. `port`
 * picks the port (a restart on the same folder and port: the clients' connection strings hold).
 * Returns { url, port, dir, user, stop(), kill() }: url is the connection string of `db`.
 */
export async function startPostgres({
  dir,
  db = 'fleet',
  port: wanted,
  echo = false,
  timeoutMs = 60_000,
} = {}) {
  const temp = !dir;
  const data = resolve(dir ?? tempDir('kvm-pg'));
  const { uid, gid } = pgIds();
  // the folders above stay searchable (the postgres user must reach `data`), `data` itself 0700
  mkdirSync(dirname(data), { recursive: true });
  if (!existsSync(data)) mkdirSync(data, { mode: 0o700 });
  if (!existsSync(join(data, 'PG_VERSION'))) {
    chownSync(data, uid, gid);
    const init = spawnSync(
      'setpriv',
      [
        `--reuid=${uid}`,
        `--regid=${gid}`,
        '--init-groups',
        '--',
        join(PG_BIN, 'initdb'),
        '-D',
        data,
        '-A',
        'trust',
        '-U',
        'postgres',
        '-E',
        'UTF8',
        '--no-instructions',
      ],
      { encoding: 'utf8', cwd: '/' },
    );
    if (init.status !== 0) {
      if (temp) rmSync(data, { recursive: true, force: true });
      throw new Error(
        `initdb failed (${init.status}): ${init.stderr || init.stdout}` +
          ' (the postgres user must be able to reach the folder: every folder above it searchable)',
      );
    }
  } else if (statSync(data).uid !== uid) {
    chownTree(data, uid, gid);
  }
  // (A postmaster.pid left by a killed run is stale when its pid is gone: postgres removes it.)
  // `port`: the same one again, e.g. a restart the clients must find where it was.
  const port = wanted ?? (await freePort());
  const child = spawnEngine(
    join(PG_BIN, 'postgres'),
    [
      '-D',
      data,
      '-c',
      'listen_addresses=127.0.0.1',
      '-p',
      String(port),
      '-c',
      `unix_socket_directories=${data}`,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ],
    // SIGINT is PostgreSQL's "fast shutdown" (SIGTERM would wait for every client to leave).
    { user: String(uid), deathSignal: 'SIGINT', echo, name: 'postgres' },
  );
  const engine = {
    name: 'postgres',
    port,
    dir: data,
    user: 'postgres',
    url: `postgres://postgres@127.0.0.1:${port}/${db}`,
    async stop() {
      live.delete(engine);
      await stopChild(child, 'SIGINT', 15_000);
      if (temp) rmSync(data, { recursive: true, force: true });
    },
    kill() {
      child.kill('SIGQUIT');
      if (temp) rmSync(data, { recursive: true, force: true, maxRetries: 3 });
    },
  };
  track(engine);
  try {
    await waitPgReady(port, data, timeoutMs, child);
    await createDatabase(port, data, db);
  } catch (e) {
    await engine.stop();
    throw e;
  }
  return engine;
}

async function waitPgReady(port, sockDir, timeoutMs, child) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`postgres exited (${child.exitCode ?? child.signalCode}): ${child.tail()}`);
    }
    const r = spawnSync(
      join(PG_BIN, 'pg_isready'),
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-t', '2'],
      { encoding: 'utf8' },
    );
    if (r.status === 0) return;
    if (Date.now() > deadline) throw new Error(`postgres not ready on ${port}: ${child.tail()}`);
    await new Promise((res) => setTimeout(res, 150));
  }
}

async function createDatabase(port, sockDir, db) {
  if (!/^[a-z_][a-z0-9_]*$/.test(db)) throw new Error(`bad database name ${db}`);
  const q = (sql) =>
    spawnSync(
      join(PG_BIN, 'psql'),
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-tAc', sql],
      { encoding: 'utf8' },
    );
  const has = q(`SELECT 1 FROM pg_database WHERE datname = '${db}'`);
  if (has.status !== 0) throw new Error(`psql failed: ${has.stderr}`);
  if (has.stdout.trim() === '1') return;
  const made = q(`CREATE DATABASE ${db}`);
  if (made.status !== 0) throw new Error(`CREATE DATABASE ${db} failed: ${made.stderr}`);
}

// ---- NATS --------------------------------------------------------------------------------------

/**
 * Starts nats-server on 127.0.0.1:<free port>. Returns { url, port, stop(), kill() };
 * stop() is SIGTERM (nats-server's clean exit).
 */
export async function startNats({ echo = false, timeoutMs = 20_000, port: wanted } = {}) {
  const port = wanted ?? (await freePort());
  const child = spawnEngine(NATS_BIN, ['-a', '127.0.0.1', '-p', String(port)], {
    echo,
    name: 'nats',
  });
  const engine = {
    name: 'nats',
    port,
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      live.delete(engine);
      await stopChild(child, 'SIGTERM');
    },
    kill() {
      child.kill('SIGKILL');
    },
  };
  track(engine);
  try {
    await waitTcp(port, timeoutMs, child, 'nats-server');
  } catch (e) {
    await engine.stop();
    throw e;
  }
  return engine;
}

// ---- coturn ------------------------------------------------------------------------------------

/**
 * Starts coturn on 127.0.0.1:<free port> (UDP and TCP), TURN REST credentials
 * (`use-auth-secret` with `secret`), relaying from 127.0.0.1 on a small port range.
 * `allowLoopbackPeers` is for tests on one machine only; a deployment must not have it.
 * Returns { port, uris, secret, realm, stop(), kill() }.
 */
export async function startCoturn({
  secret = randomBytes(24).toString('hex'),
  realm = 'kvm.test',
  allowLoopbackPeers = false,
  relayPorts = 64,
  echo = false,
  timeoutMs = 20_000,
} = {}) {
  const port = await freePort({ udp: true });
  const work = tempDir('kvm-turn');
  // A random range in the dynamic ports: two coturns at once rarely overlap, and coturn skips
  // a port it cannot bind anyway.
  const min = 49152 + Math.floor(Math.random() * (16000 - relayPorts));
  const args = [
    '-n',
    '--listening-ip=127.0.0.1',
    '--relay-ip=127.0.0.1',
    `--listening-port=${port}`,
    `--min-port=${min}`,
    `--max-port=${min + relayPorts - 1}`,
    '--use-auth-secret',
    `--static-auth-secret=${secret}`,
    `--realm=${realm}`,
    '--fingerprint',
    '--no-cli',
    '--no-tls',
    '--no-dtls',
    '--no-software-attribute',
    `--pidfile=${join(work, 'turnserver.pid')}`,
    `--userdb=${join(work, 'turndb')}`,
    '--log-file=stdout',
    '--simple-log',
  ];
  if (allowLoopbackPeers) args.push('--allow-loopback-peers');
  const child = spawnEngine(TURN_BIN, args, { echo, name: 'coturn' });
  const engine = {
    name: 'coturn',
    port,
    secret,
    realm,
    minPort: min,
    maxPort: min + relayPorts - 1,
    uris: [`turn:127.0.0.1:${port}?transport=udp`, `turn:127.0.0.1:${port}?transport=tcp`],
    async stop() {
      live.delete(engine);
      await stopChild(child, 'SIGTERM');
      rmSync(work, { recursive: true, force: true });
    },
    kill() {
      child.kill('SIGKILL');
      rmSync(work, { recursive: true, force: true });
    },
  };
  track(engine);
  try {
    await waitTcp(port, timeoutMs, child, 'turnserver');
  } catch (e) {
    await engine.stop();
    throw e;
  }
  return engine;
}

// ---- SMTP sink ---------------------------------------------------------------------------------

function decodeQuotedPrintable(s) {
  return s
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/gi, (_, h) => String.fromCharCode(parseInt(h, 16)));
}

/** A received mail: envelope, headers, and the text body decoded (7bit, quoted-printable, base64). */
/** A header's RFC 2047 encoded words (`=?UTF-8?Q?...?=`, `?B?`) decoded (nodemailer writes them). */
function decodeWords(value) {
  return value.replace(/=\?[^?]+\?([QqBb])\?([^?]*)\?=(?:\s+(?==\?))?/g, (_, enc, text) =>
    enc.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(
          text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-Fa-f]{2})/g, (_m, h) => String.fromCharCode(parseInt(h, 16))),
          'latin1',
        ).toString('utf8'),
  );
}

function parseMail(raw, envelope) {
  const split = raw.search(/\r?\n\r?\n/);
  const head = split < 0 ? raw : raw.slice(0, split);
  let body = split < 0 ? '' : raw.slice(split).replace(/^\r?\n\r?\n/, '');
  const headers = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const cte = (headers['content-transfer-encoding'] ?? '').toLowerCase();
  if (cte === 'quoted-printable') body = decodeQuotedPrintable(body);
  else if (cte === 'base64') body = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString();
  return {
    from: envelope.mailFrom ? envelope.mailFrom.address : '',
    to: envelope.rcptTo.map((r) => r.address.toLowerCase()),
    subject: decodeWords(headers.subject ?? ''),
    headers,
    text: body,
    raw,
    at: Date.now(),
  };
}

/**
 * An SMTP server on 127.0.0.1:<free port> that delivers nothing: it keeps what it receives in
 * memory (the last `keep` mails) and, with `print`, writes each to stderr labelled as the sink's.
 * Returns { port, host, mails(), waitFor(to, timeoutMs), clear(), stop(), kill() }.
 * waitFor resolves the oldest mail to `to` that no earlier waitFor returned.
 */
export async function startSmtpSink({ print = false, keep = 500 } = {}) {
  const { SMTPServer } = await import('smtp-server');
  const store = [];
  const taken = new WeakSet();
  const waiters = new Set();
  const server = new SMTPServer({
    banner: 'SMTP sink for development and tests: mails are kept in memory, never delivered',
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    size: 1 << 20,
    logger: false,
    onData(stream, session, cb) {
      const chunks = [];
      let size = 0;
      stream.on('data', (c) => {
        size += c.length;
        if (size <= 1 << 20) chunks.push(c);
      });
      stream.on('end', () => {
        const mail = parseMail(Buffer.concat(chunks).toString('utf8'), session.envelope);
        store.push(mail);
        if (store.length > keep) store.shift();
        if (print) {
          process.stderr.write(
            `[smtp sink: not delivered] to ${mail.to.join(', ')}: ${mail.subject}\n${mail.text}\n`,
          );
        }
        for (const w of [...waiters]) w();
        cb();
      });
    },
  });
  const port = await freePort();
  await new Promise((res, rej) => {
    server.once('error', rej);
    server.listen(port, '127.0.0.1', res);
  });
  server.on('error', () => {});
  const engine = {
    name: 'smtp-sink',
    host: '127.0.0.1',
    port,
    mails: () => store.slice(),
    clear: () => {
      store.length = 0;
    },
    waitFor(to, timeoutMs = 10_000) {
      const want = to.toLowerCase();
      const pick = () => {
        const m = store.find((x) => !taken.has(x) && x.to.includes(want));
        if (m) taken.add(m);
        return m;
      };
      return new Promise((res, rej) => {
        const now = pick();
        if (now) return res(now);
        const check = () => {
          const m = pick();
          if (!m) return;
          waiters.delete(check);
          clearTimeout(t);
          res(m);
        };
        const t = setTimeout(() => {
          waiters.delete(check);
          rej(new Error(`smtp sink: no mail to ${to} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
      });
    },
    async stop() {
      live.delete(engine);
      await new Promise((res) => server.close(() => res()));
    },
    kill() {
      server.close(() => {});
    },
  };
  return track(engine);
}
