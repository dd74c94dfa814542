import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readZip } from '../../storage/zip';
import { tempDataDir } from '../../test-helpers';
import { LogBundle } from './log-bundle';
import { PRIV, PSK, PUB, SETUP, TSKEY, UAPI_HEX } from './mask-test-kit';

const SECRETS = [PRIV, PSK, UAPI_HEX, TSKEY, SETUP];

describe("LogBundle: the private-network apps' secrets never leave the device", () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = '';
  });

  it("masks WireGuard, Tailscale and NetBird secrets in logs, config and state, and never collects the apps' files", async () => {
    dir = await tempDataDir();
    await mkdir(join(dir, 'logs'), { recursive: true });
    await mkdir(join(dir, 'apps', 'wireguard'), { recursive: true });
    // What the WireGuard app stores (docs/apps.md): never part of the bundle.
    const conf = `[Interface]\nPrivateKey = ${PRIV}\n[Peer]\nPublicKey = ${PUB}\nPresharedKey = ${PSK}\nAllowedIPs = 10.77.0.0/24\n`;
    await writeFile(join(dir, 'apps', 'wireguard', 'wg.conf'), conf, { mode: 0o600 });
    await writeFile(join(dir, 'apps', 'wireguard', 'private.key'), `${PRIV}\n`, { mode: 0o600 });
    // Log lines a careless tool or a debug line could write (pino JSON and raw text).
    const lines = [
      JSON.stringify({ level: 30, msg: `wireguard: setconf failed on\n${conf}` }),
      JSON.stringify({ level: 40, msg: `wg: private_key=${UAPI_HEX}\npreshared_key=${UAPI_HEX}` }),
      JSON.stringify({
        level: 30,
        msg: `tailscale up --auth-key=${TSKEY} --login-server https://hs.example`,
      }),
      `netbird up --setup-key ${SETUP} --management-url https://nb.example`,
      `peer ${PUB} handshake ok`,
    ];
    await writeFile(join(dir, 'logs', 'server.log'), `${lines.join('\n')}\n`);

    const bundle = new LogBundle({
      dataDir: dir,
      versions: () => ({ firmware: 'test' }),
      config: { apps: { tailscale: { auth_key: TSKEY }, netbird: { setup_key: SETUP } } },
      parts: async () => ({
        state: {
          wireguard: { public_key: PUB, peers: [{ public_key: PUB, has_preshared_key: true }] },
          last_error: `PrivateKey = ${PRIV}`,
        },
      }),
    });
    const { zip } = await bundle.build();
    const files = readZip(zip);
    expect([...files.keys()].sort()).toEqual([
      'config.json',
      'logs/server.log',
      'state.json',
      'versions.json',
    ]);
    const all = [...files.values()].map((b) => b.toString('utf8')).join('\n');
    for (const s of SECRETS) expect(all).not.toContain(s);
    expect(all).not.toContain(PRIV.slice(0, 16));
    // What support needs stays: the public key, the tool's command line, the flag set.
    expect(all).toContain(`peer ${PUB} handshake ok`);
    expect(files.get('logs/server.log')!.toString()).toContain(
      'tailscale up --auth-key=xxxx --login-server',
    );
    expect(JSON.parse(files.get('state.json')!.toString())).toMatchObject({
      wireguard: { peers: [{ public_key: PUB, has_preshared_key: true }] },
    });
  });
});
