/**
 * Simulated devices against a real fleet (HTTPS, PostgreSQL, the relay): bound by `bind/login`
 * with the fleet's certificate as the only trust, online; their screens through the wall socket
 * (a JPEG of its own size inside the box, the device's colour, a new picture when the counter changes); the tunnel
 * to their tiny server (`/d/<id>/api/info` says Simulated); an upgrade round trip (the version
 * from X-Sim-Version or the package's manifest, the socket dropped and back, last_upgrade), and
 * a device made to fail coming back on its old version.
 */
import { createServer as createNetServer } from 'node:net';
import { request } from 'node:https';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jpegJs from 'jpeg-js';
import WebSocket from 'ws';
import { WALL_PATH } from '@kvm/protocol';
import {
  startPostgres,
  startSmtpSink,
  type PostgresEngine,
  type SmtpSink,
} from '../../../scripts/cloud/engines.mjs';
import { craftManifest, craftPackage } from '../../../server/src/services/upgrade/test-package';
import { SESSION_COOKIE } from '../accounts/accounts';
import { SmtpMailer } from '../accounts/mailer';
import { waitFor } from '../agents/test-kit';
import { parseConfig } from '../config';
import { createFleet, type Fleet } from '../fleet';
import { signUpAndIn, type Kit } from '../test-kit';
import { ensureCertificate } from '../tls';
import { ManifestSniffer, SIM_MODEL, type SimDevice } from './device';
import { SIM_SCREEN } from './picture';
import { SimFleet } from './sim-fleet';

let pg: PostgresEngine;
let sink: SmtpSink;
let fleet: Fleet;
let work: string;
let base: string;
let ca: string;
let cookie: string;
let sims: SimFleet;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sim-test-'));
  pg = await startPostgres();
  sink = await startSmtpSink();
  const port = await freePort();
  base = `https://127.0.0.1:${port}`;
  const config = parseConfig({
    replica: 'sim-test',
    publicUrl: base,
    port,
    database: pg.url,
    smtp: { host: sink.host, port: sink.port, from: 'fleet@fleet.test' },
    data: work,
    wall: { interval_ms: 1000 },
  });
  const tls = await ensureCertificate(config.tls, '127.0.0.1');
  ca = tls.cert.toString();
  fleet = await createFleet(config, {
    relay: true,
    mailer: new SmtpMailer(config.smtp),
    https: { cert: tls.cert, key: tls.key },
  });
  await fleet.app.listen({ host: '127.0.0.1', port });
  const kit = { pg, sink, config, fleet, app: fleet.app, unbound: [] } as unknown as Kit;
  cookie = (await signUpAndIn(kit, 'simowner', 'pw1234')).cookie;
  sims = await SimFleet.start({
    fleetUrl: base,
    ca,
    account: { username: 'simowner', password: 'pw1234' },
    count: 3,
    changeEveryMs: 1500,
    rebootMs: 300,
    failUpgrade: (i) => i === 3,
  });
  await sims.waitOnline(30_000);
}, 120_000);

afterAll(async () => {
  await sims?.stop();
  await fleet?.close();
  await sink?.stop();
  await pg?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** A request to the fleet as the signed-in browser (its own CA trusted). */
function call(
  method: string,
  path: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: () => Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), {
      method,
      ca,
      headers: {
        cookie: `${SESSION_COOKIE}=${cookie}`,
        ...(body ? { 'content-length': String(body.length) } : {}),
        ...headers,
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, text, json: () => JSON.parse(text) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function multipart(data: Buffer): { body: Buffer; type: string } {
  const boundary = 'simboundary42';
  return {
    type: `multipart/form-data; boundary=${boundary}`,
    body: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.tar.gz"\r\n` +
          'Content-Type: application/gzip\r\n\r\n',
      ),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  };
}

async function upgrade(d: SimDevice, data: Buffer, headers: Record<string, string> = {}) {
  const { body, type } = multipart(data);
  const up = await call('POST', `/d/${d.id}/api/upgrade/upload`, body, {
    'content-type': type,
    ...headers,
  });
  expect(up.status).toBe(200);
  const welcomes = d.welcomes;
  const start = await call('POST', `/d/${d.id}/api/upgrade/start?save_config=true`);
  expect(start.status, start.text).toBe(200);
  expect((start.json().result as { status: string }).status, start.text + up.text).toBe(
    'Upgrade started',
  );
  // the device goes away and comes back
  await waitFor(() => d.welcomes > welcomes, 20_000, 'the device back');
  const status = await waitFor(
    async () => {
      const r = await call('GET', `/d/${d.id}/api/upgrade/status`);
      return r.status === 200 ? (r.json().result as Record<string, unknown>) : null;
    },
    20_000,
    'upgrade status',
  );
  return status;
}

describe('simulated devices', () => {
  it('are bound to the account, online, and say they are simulated', async () => {
    const names = sims.devices.map((d) => d.name);
    expect(names.every((n) => n.startsWith('sim-'))).toBe(true);
    const list = await call('GET', '/cloud-basic/v1/devices');
    const rows = (list.json().result as { devices: Array<{ name: string; online: boolean }> })
      .devices;
    for (const n of names) expect(rows.find((r) => r.name === n)?.online).toBe(true);

    const info = await call('GET', `/d/${sims.devices[0]!.id}/api/info`);
    expect(info.status).toBe(200);
    const r = info.json().result as { system: { platform: { model: string } } };
    expect(r.system.platform.model).toBe(SIM_MODEL);
    const page = await call('GET', `/d/${sims.devices[0]!.id}/`, undefined, {
      accept: 'text/html',
    });
    expect(page.text).toContain('SIMULATED DEVICE');
  }, 30_000);

  it('their screens reach the wall socket and change with the counter', async () => {
    const d = sims.devices[0]!;
    const ws = new WebSocket(`${base.replace('https', 'wss')}${WALL_PATH}`, {
      ca,
      headers: { cookie: `${SESSION_COOKIE}=${cookie}`, origin: base },
    });
    const pictures: Array<{ id: string; jpeg: Buffer }> = [];
    ws.on('message', (data: Buffer, binary: boolean) => {
      if (!binary) return;
      const n = data[0]!;
      pictures.push({ id: data.subarray(1, 1 + n).toString(), jpeg: data.subarray(1 + n) });
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ t: 'watch', ids: sims.devices.map((x) => x.id) }));
    await waitFor(
      () => sims.devices.every((x) => pictures.some((p) => p.id === x.id)),
      20_000,
      'a picture of each',
    );
    const first = pictures.find((p) => p.id === d.id)!;
    const img = jpegJs.decode(first.jpeg);
    expect([img.width, img.height]).toEqual([SIM_SCREEN.width, SIM_SCREEN.height]);
    // the corner is the device's colour (JPEG: within a few steps)
    for (let c = 0; c < 3; c += 1) expect(Math.abs(img.data[c]! - d.color[c]!)).toBeLessThan(8);
    await waitFor(
      () => pictures.filter((p) => p.id === d.id).length >= 2,
      20_000,
      'a changed picture',
    );
    const [a, b] = pictures.filter((p) => p.id === d.id);
    expect(a!.jpeg.equals(b!.jpeg)).toBe(false);
    ws.close();
  }, 40_000);

  it('an upgrade round trip: the new version, or a simulated rollback', async () => {
    const ok = sims.devices[0]!;
    const status = await upgrade(ok, Buffer.from('not a package'), { 'x-sim-version': '2.0.0' });
    expect(ok.version).toBe('2.0.0');
    expect(status.last_upgrade).toMatchObject({ result: 'success', to_version: '2.0.0' });

    // the version read from a package's manifest, as the fleet's rollout sends one
    const pkgFile = join(work, 'p.tar.gz');
    await craftPackage(pkgFile, craftManifest([], { version: 'V0.3.0' }), null, []);
    const second = sims.devices[1]!;
    const s2 = await upgrade(second, await readFile(pkgFile));
    expect(s2.last_upgrade).toMatchObject({ result: 'success', to_version: 'V0.3.0' });

    const failing = sims.devices[2]!;
    const s3 = await upgrade(failing, Buffer.from('x'), { 'x-sim-version': '2.0.0' });
    expect(failing.version).toBe('1.0.0');
    expect(s3.last_upgrade).toMatchObject({ result: 'failed', reason: 'simulated rollback' });
  }, 60_000);

  it('reads a package manifest version (ManifestSniffer)', async () => {
    const pkgFile = join(work, 'q.tar.gz');
    await craftPackage(pkgFile, craftManifest([], { version: 'V1.2.3' }), null, []);
    const s = new ManifestSniffer();
    const data = await readFile(pkgFile);
    for (let i = 0; i < data.length; i += 7) s.push(data.subarray(i, i + 7));
    expect(await s.end()).toBe('V1.2.3');
  });
});
