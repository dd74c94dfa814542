/** The replica's configuration: defaults, environment overrides, errors naming the key. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from './config';

const dir = mkdtempSync(join(tmpdir(), 'fleet-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config', () => {
  it('completes a minimal config', () => {
    const c = parseConfig({ database: 'postgres://u@127.0.0.1:5432/fleet', port: 9443 }, '/srv');
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 9443,
      publicUrl: 'https://127.0.0.1:9443',
      data: '/srv/.data/fleet',
      tls: { cert: '/srv/.data/fleet/tls/cert.pem', key: '/srv/.data/fleet/tls/key.pem' },
      nats: [],
      turn: null,
      trustProxy: false,
    });
    expect(c.replica).toMatch(/^fleet-.+-9443$/);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('names the key of a bad or unknown value', () => {
    expect(() => parseConfig({})).toThrow(/database/);
    expect(() => parseConfig({ database: 'mysql://x/y' })).toThrow(/database: must be a postgres/);
    expect(() =>
      parseConfig({ database: 'postgres://x/y', turn: { secret: 'short', uris: ['turn:x'] } }),
    ).toThrow(/turn\.secret/);
    expect(() => parseConfig({ database: 'postgres://x/y', prot: 1 })).toThrow(ConfigError);
    expect(() => parseConfig({ database: 'postgres://x/y', publicUrl: 'http://x' })).toThrow(
      /publicUrl/,
    );
  });

  it('reads JSON and YAML files, and FLEET_* overrides them', () => {
    const json = join(dir, 'a.json');
    writeFileSync(json, JSON.stringify({ database: 'postgres://a@h/fleet', replica: 'r1' }));
    expect(loadConfig(json, {}).replica).toBe('r1');
    const yaml = join(dir, 'b.yaml');
    writeFileSync(
      yaml,
      'database: postgres://b@h/fleet\nport: 7443\nnats: [nats://127.0.0.1:4222]\n',
    );
    const y = loadConfig(yaml, { FLEET_PORT: '6443', FLEET_REPLICA: 'env-r' });
    expect(y).toMatchObject({ port: 6443, replica: 'env-r', nats: ['nats://127.0.0.1:4222'] });
    expect(y.data).toBe(join(dir, '.data/fleet'));
    writeFileSync(join(dir, 'bad.json'), '{');
    expect(() => loadConfig(join(dir, 'bad.json'), {})).toThrow(ConfigError);
    expect(() => loadConfig(join(dir, 'missing.json'), {})).toThrow(/cannot read/);
  });
});
