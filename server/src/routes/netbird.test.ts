import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fixturesOf, RECORDED, writeScript } from '../drivers/apps/apps-test-kit';
import type { NetbirdApp } from '../drivers/apps/netbird';
import type { ZerotierApp } from '../drivers/apps/zerotier';
import { AppPerTest, jsonCaller } from '../test-helpers';
import type { NetbirdControl } from './netbird';
import type { ZerotierControl } from './zerotier';

// the routes' view of the apps is what the drivers offer
const netbirdFits = (a: NetbirdApp): NetbirdControl => a;
const zerotierFits = (a: ZerotierApp): ZerotierControl => a;
void netbirdFits;
void zerotierFits;

const NB = fixturesOf('netbird');
const ZT = fixturesOf('zerotier');
const apps = new AppPerTest();
let tools: string;
beforeEach(async () => {
  tools = await mkdtemp(join(tmpdir(), 'kvm-nbzt-tools-'));
});
afterEach(async () => {
  await apps.stop();
  await rm(tools, { recursive: true, force: true });
});

const script = (name: string, body: string): Promise<string> => writeScript(tools, name, body);

/** Stand-ins for the tools that print the recorded outputs (neither tool is installable here). */
async function fakeTools() {
  const netbird = await script(
    'netbird',
    `case "$*" in
  *"service run"*) exec sleep 600 ;;
  *version*) cat ${NB}/version.txt ;;
  *"status --json"*) cat ${NB}/status-connected.json ;;
  *" up"*) cat ${NB}/up-connected.txt ;;
  *logout*) cat ${NB}/logout.txt ;;
  *) echo "unknown command" >&2; exit 1 ;;
esac`,
  );
  const zerotierOne = await script('zerotier-one', 'exec sleep 600');
  const zerotierCli = await script(
    'zerotier-cli',
    `case "$*" in
  *" -v"*) cat ${ZT}/version.txt ;;
  *"-j info"*) cat ${ZT}/info-online.json ;;
  *"-j listnetworks"*) cat ${ZT}/listnetworks-ok.json ;;
  *" join "*) cat ${ZT}/join-ok.txt ;;
  *" leave "*) cat ${ZT}/leave-ok.txt ;;
  *" orbit "*) cat ${ZT}/orbit-ok.txt ;;
  *" deorbit "*) cat ${ZT}/deorbit-ok.txt ;;
  *) echo "unknown"; exit 1 ;;
esac`,
  );
  return { netbird, zerotierOne, zerotierCli };
}

async function start(installed: boolean) {
  const t = installed ? await fakeTools() : null;
  const { app, token } = await apps.start({
    system: { network: 'disabled' },
    apps: t
      ? {
          netbird: { tool: t.netbird },
          zerotier: { cli: t.zerotierCli, daemon: t.zerotierOne },
        }
      : { netbird: { tool: join(tools, 'no-netbird') }, zerotier: { cli: join(tools, 'no-zt') } },
  });
  return { app, call: jsonCaller(app, token) };
}

describe('/api/netbird and /api/zerotier: session and bad input', () => {
  it('every route asks for a session', async () => {
    const { app } = await start(false);
    for (const [method, url] of [
      ['GET', '/api/netbird/get_info'],
      ['POST', '/api/netbird/login'],
      ['GET', '/api/zerotier/status'],
      ['POST', '/api/zerotier/set_token?token=8056c2e21c000001'],
    ] as const) {
      const res = await app.inject({ method, url });
      expect(res.statusCode, url).toBe(401);
    }
  });

  it('a bad setup key or management URL is 400 naming it; the key is never echoed', async () => {
    const { call } = await start(false);
    const secret = 'abc;rm -rf /';
    let res = await call('POST', `/api/netbird/login?setup_key=${encodeURIComponent(secret)}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    expect(res.json().result.error_msg).toContain("'setup_key'");
    expect(res.body).not.toContain('rm -rf');
    res = await call('POST', '/api/netbird/login', { setup_key: '--management-url=x' });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'setup_key'");
    res = await call('POST', `/api/netbird/login?setup_key=${'A'.repeat(129)}`);
    expect(res.statusCode).toBe(400);
    for (const url of [
      'http://netbird.example.lan',
      'https://user:pw@netbird.example.lan',
      `https://${'a'.repeat(260)}.example`,
      'https://netbird.example.lan/?x=1',
      'ftp://x',
    ]) {
      res = await call('POST', `/api/netbird/config?management_url=${encodeURIComponent(url)}`);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().result.error_msg).toContain("'management_url'");
    }
    res = await call('POST', '/api/netbird/config');
    expect(res.statusCode).toBe(400);
    res = await call('POST', '/api/netbird/config?disable_dns=maybe');
    expect(res.json().result.error_msg).toContain("'disable_dns'");
  });

  it('a network id must be exactly 16 hex digits; set needs a setting', async () => {
    const { call } = await start(false);
    for (const bad of [
      '8056c2e21c00000',
      '8056c2e21c0000011',
      '8056c2e21c00000g',
      '-8056c2e21c00001',
    ]) {
      const res = await call('POST', `/api/zerotier/set_token?token=${bad}`);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().result.error_msg).toContain("'token'");
    }
    let res = await call('POST', '/api/zerotier/join');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'nwid'");
    res = await call('POST', '/api/zerotier/set?nwid=8056c2e21c000001');
    expect(res.statusCode).toBe(400);
    res = await call('POST', '/api/zerotier/set?nwid=8056c2e21c000001&allow_default=perhaps');
    expect(res.json().result.error_msg).toContain("'allow_default'");
    res = await call('POST', '/api/zerotier/orbit?world_id=deadbeef0&seed=deadbeef00');
    expect(res.json().result.error_msg).toContain("'world_id'");
    res = await call('POST', '/api/zerotier/orbit?world_id=deadbeef00&seed=-deadbeef0');
    expect(res.json().result.error_msg).toContain("'seed'");
    res = await call('POST', '/api/zerotier/deorbit');
    expect(res.statusCode).toBe(400);
  });
});

describe('not installed (neither tool is installable here)', () => {
  it('the status says so; start is a 400 naming the program; the apps list shows both', async () => {
    const { call } = await start(false);
    let res = await call('GET', '/api/netbird/get_info');
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toMatchObject({
      running: false,
      netbird_ip: '',
      connected: false,
      installed: false,
      state: 'not_installed',
    });
    res = await call('POST', '/api/netbird/start');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('AppNotInstalledError');
    expect(res.json().result.error_msg).toContain('no-netbird is not installed on this device');

    res = await call('GET', '/api/zerotier/status');
    expect(res.json().result).toMatchObject({
      enabled: false,
      process_running: false,
      installed: false,
      state: 'not_installed',
    });
    res = await call('POST', '/api/zerotier/start');
    expect(res.statusCode).toBe(400);
    // a valid id with the app not installed: the tool's absence, not a crash
    res = await call('POST', '/api/zerotier/set_token?token=8056c2e21c000001');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('AppNotInstalledError');

    res = await call('GET', '/api/apps');
    const list = res.json().result.apps as Array<{ id: string; state: string }>;
    expect(list.find((a) => a.id === 'netbird')?.state).toBe('not_installed');
    expect(list.find((a) => a.id === 'zerotier')?.state).toBe('not_installed');
  });
});

describe("GL's shapes with stand-in tools printing the recorded outputs", () => {
  it('NetBird: start, get_info, login with a key, config, logout, stop', async () => {
    const { call } = await start(true);
    let res = await call('POST', '/api/netbird/start');
    expect(res.json().result).toEqual({ success: true, err_msg: '', running: true });
    res = await call('GET', '/api/netbird/get_info');
    expect(res.json().result).toMatchObject({ ...RECORDED.netbirdInfo, version: '0.36.5' });
    res = await call('POST', '/api/netbird/config?management_url=https://192.168.8.20:33073');
    expect(res.json().result).toMatchObject({
      success: true,
      management_url: 'https://192.168.8.20:33073',
    });
    res = await call('GET', '/api/netbird/config');
    expect(res.json().result).toEqual({
      enable: true,
      management_url: 'https://192.168.8.20:33073',
      disable_dns: true,
      accept_routes: true,
    });
    res = await call('POST', '/api/netbird/login', {
      setup_key: 'A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF',
    });
    expect(res.json().result).toEqual({
      success: true,
      err_msg: '',
      login_url: '',
      login_type: 'setup_key',
    });
    res = await call('POST', '/api/netbird/logout');
    expect(res.json().result).toEqual({ success: true, err_msg: '' });
    res = await call('POST', '/api/netbird/stop');
    expect(res.json().result).toEqual({ success: true, err_msg: '', running: false });
  });

  it('ZeroTier: start, status, set_token, join, leave, stop', async () => {
    const { call } = await start(true);
    let res = await call('POST', '/api/zerotier/start');
    expect(res.json().result).toEqual({ success: true, output: '', process_running: true });
    res = await call('GET', '/api/zerotier/status');
    expect(res.json().result).toMatchObject(RECORDED.zerotierStatus);
    res = await call('POST', '/api/zerotier/set_token?token=8056C2E21C000001');
    expect(res.json().result).toEqual({
      success: true,
      message: 'Token updated successfully',
      join_output: '200 join OK',
      attempts: 1,
    });
    res = await call('POST', '/api/zerotier/orbit?world_id=DEADBEEF00&seed=deadbeef00');
    expect(res.json().result).toEqual({ success: true, output: '200 orbit OK' });
    res = await call('POST', '/api/zerotier/deorbit?world_id=deadbeef00');
    expect(res.json().result).toEqual({ success: true, output: '200 deorbit OK' });
    res = await call('POST', '/api/zerotier/leave?nwid=48d6023c46856feb');
    expect(res.json().result).toEqual({ success: true, output: '200 leave OK' });
    res = await call('POST', '/api/zerotier/stop');
    expect(res.json().result).toEqual({ success: true, output: '', process_running: false });
  });
});
