#!/usr/bin/env node
// `npm run cloud [-- --replicas N --port P]`: the fleet server and its engines on loopback for
// development (docs/cloud.md "Running it", docs/operations.md "Running the fleet"):
// PostgreSQL 15 (data kept in .data/cloud/pg), nats-server, coturn, an SMTP sink that prints
// every mail it gets, and N fleet replicas (fleet/dist/main.js) on ports P, P+1, ... sharing
// the database, NATS, the TLS certificate and the TURN secret. Ctrl-C (SIGINT) or SIGTERM stops
// them all; every child also dies with this process if it is killed outright.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startCoturn, startNats, startPostgres, startSmtpSink, stopAll } from './cloud/engines.mjs';
import { fleetConfig, startFleet } from './cloud/fleet-process.mjs';
import { signUpByMailCode } from './cloud/signup.mjs';

const root = new URL('..', import.meta.url).pathname;

const USAGE = `usage: npm run cloud [-- --replicas N] [--port P] [--data DIR]
  --replicas N  fleet replicas to run (default 1), on ports P .. P+N-1
  --port P      the first replica's HTTPS port (default 8843), on 127.0.0.1
  --data DIR    where PostgreSQL's data and the fleet's certificate are kept (default .data/cloud)
  --sim N       also run N simulated devices (fleet/dist/sim.js), bound to an account it makes
                and prints (username simowner, its password kept in DIR/fleet/sim-password)`;

let opts;
try {
  opts = parseArgs({
    options: {
      replicas: { type: 'string', default: '1' },
      port: { type: 'string', default: '8843' },
      data: { type: 'string', default: join(root, '.data', 'cloud') },
      sim: { type: 'string', default: '0' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (e) {
  console.error(`cloud: ${e.message}\n${USAGE}`);
  process.exit(2);
}
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
const replicas = Number(opts.replicas);
const port = Number(opts.port);
if (!Number.isInteger(replicas) || replicas < 1 || replicas > 16) {
  console.error(`cloud: --replicas must be 1-16, not ${opts.replicas}\n${USAGE}`);
  process.exit(2);
}
if (!Number.isInteger(port) || port < 1 || port + replicas - 1 > 65535) {
  console.error(`cloud: --port must be a port number, not ${opts.port}\n${USAGE}`);
  process.exit(2);
}

const simCount = Number(opts.sim);
if (!Number.isInteger(simCount) || simCount < 0 || simCount > 1000) {
  console.error(`cloud: --sim must be 0-1000, not ${opts.sim}\n${USAGE}`);
  process.exit(2);
}

const say = (msg) => process.stderr.write(`cloud: ${msg}\n`);

/** fleet/dist/main.js, built when missing (`npm run cloud` builds it through bootstrap already). */
function ensureFleetBuilt() {
  if (existsSync(join(root, 'fleet/dist/main.js')) && existsSync(join(root, 'fleet/dist/sim.js'))) {
    return;
  }
  say('building the fleet server (node scripts/build.mjs fleet)');
  const r = spawnSync(process.execPath, [join(root, 'scripts/build.mjs'), 'fleet'], {
    stdio: 'inherit',
    cwd: root,
  });
  if (r.status !== 0) {
    say('the fleet server did not build');
    process.exit(r.status ?? 1);
  }
}

/** A secret kept in the data folder (0600), made at first use. */
function keptSecret(dir, name) {
  const file = join(dir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const s = randomBytes(24).toString('hex');
  writeFileSync(file, `${s}\n`, { mode: 0o600 });
  return s;
}

const fleets = [];
let stopping = null;
let sims = null;

/** POST a JSON body to the fleet (its own certificate trusted): the kvmd envelope's result. */
function post(url, path, body, ca) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = request(new URL(`/cloud-basic/v1/${path}`, url), {
      method: 'POST',
      ca,
      headers: { 'content-type': 'application/json', 'content-length': data.length },
    });
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const j = JSON.parse(Buffer.concat(chunks).toString() || '{}');
        resolve({ status: res.statusCode, result: j.result });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

/**
 * The simulated devices' account (made at first use, through the sink's e-mail code) and N
 * simulated devices bound to it, in a child that ends with this process.
 */
async function startSims(url, smtp, fleetData) {
  const username = 'simowner';
  const email = 'simowner@sim.invalid';
  const ca = readFileSync(join(fleetData, 'tls', 'cert.pem'), 'utf8');
  const pwFile = join(fleetData, 'sim-password');
  const made = !existsSync(pwFile);
  const password = made
    ? `s${randomBytes(6).toString('base64url').slice(0, 8)}1`
    : readFileSync(pwFile, 'utf8').trim();
  if (made) {
    await signUpByMailCode(
      async (path, body) => {
        const r = await post(url, path, body, ca);
        return { status: r.status, text: JSON.stringify(r.result) };
      },
      (to) => smtp.waitFor(to, 15_000),
      { username, email, password },
    );
    writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  }
  const child = spawn(
    process.execPath,
    [
      join(root, 'fleet/dist/sim.js'),
      '--fleet',
      url,
      '--ca',
      join(fleetData, 'tls', 'cert.pem'),
      '--username',
      username,
      '--count',
      String(simCount),
      '--exit-with-stdin',
    ],
    { stdio: ['pipe', 'inherit', 'inherit'], env: { ...process.env, SIM_PASSWORD: password } },
  );
  child.on('exit', (code) => {
    if (!stopping) say(`the simulated devices exited (${code})`);
  });
  return { username, password, child };
}

async function stopEverything(code) {
  if (stopping) return stopping;
  stopping = (async () => {
    say('stopping');
    sims?.child.kill('SIGTERM');
    await Promise.allSettled(fleets.map((f) => f.stop()));
    await stopAll();
    say('stopped');
    process.exit(code);
  })();
  return stopping;
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => void stopEverything(0));

try {
  ensureFleetBuilt();
  const data = opts.data;
  mkdirSync(data, { recursive: true });
  // the postgres user reaches its folder through this one; the secrets inside stay 0600
  chmodSync(data, 0o755);
  const fleetData = join(data, 'fleet');
  mkdirSync(fleetData, { recursive: true, mode: 0o700 });

  say('starting PostgreSQL 15, nats-server, coturn and the SMTP sink');
  const [pg, nats, smtp] = await Promise.all([
    startPostgres({ dir: join(data, 'pg') }),
    startNats(),
    startSmtpSink({ print: true }),
  ]);
  // Loopback development: the device and the browser are on this machine, so the relay's peers
  // are loopback addresses, which coturn refuses without this flag. It listens on 127.0.0.1
  // only; deploy/cloud/turnserver.conf (a real server) never has it.
  const turn = await startCoturn({
    secret: keptSecret(fleetData, 'turn-secret'),
    allowLoopbackPeers: true,
  });
  say(`PostgreSQL ${pg.url} (data ${pg.dir}), NATS ${nats.url}, coturn ${turn.uris.join(' ')}`);
  say(
    `SMTP sink on 127.0.0.1:${smtp.port}: a development sink, mails are printed here, never sent`,
  );

  // The first replica makes the shared certificate; the others start once it exists.
  for (let i = 0; i < replicas; i += 1) {
    const config = fleetConfig({
      index: i,
      port: port + i,
      data: fleetData,
      database: pg.url,
      nats: [nats.url],
      turn: { secret: turn.secret, uris: turn.uris, ttl_s: 3600 },
      smtp: { host: smtp.host, port: smtp.port },
    });
    const fleet = await startFleet(config, { echo: true });
    fleets.push(fleet);
    fleet.exited.then((how) => {
      if (!stopping) {
        say(`fleet replica ${config.replica} exited (${how}): stopping everything`);
        void stopEverything(1);
      }
    });
  }

  const url = fleets[0].url;
  if (simCount > 0) {
    sims = await startSims(url, smtp, fleetData);
    say(
      `${simCount} simulated devices (names sim-*) bound to the fleet account ` +
        `"${sims.username}", password "${sims.password}" (kept in ${join(fleetData, 'sim-password')})`,
    );
  }
  console.log(`
The fleet is running (${replicas} replica${replicas > 1 ? 's' : ''}):
  ${fleets.map((f) => f.url).join('\n  ')}
Its certificate is self-signed (${join(fleetData, 'tls')}): the browser asks once.

Bind a local device to it:
  1. in another terminal: npm start   (the device's console on https://localhost:8443)
  2. open ${url}, sign up (the e-mail code is printed here by the SMTP sink), sign in
  3. on the device's console: Settings > Cloud service, turn it on, fleet server ${url},
     Connect, trust the certificate whose fingerprint it shows (it is pinned), then
     "Bind with a code"
  4. on the fleet's page: "Add device" with the 8-digit code the device shows (valid 60 s)
  5. open the device from the fleet's device list: ${url}/d/<device id>/
Ctrl-C stops everything.`);
} catch (e) {
  say(e instanceof Error ? (e.stack ?? e.message) : String(e));
  await stopEverything(1);
}
