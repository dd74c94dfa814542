/**
 * Users, groups and OpenID Connect sign-in end to end (issue 26, docs/cloud.md "Tests and figures
 * (part 2)"): a fleet replica on real PostgreSQL/NATS/coturn, a local OpenID Connect provider
 * (npm oidc-provider, fleet/src/oidc/test-provider.ts) the fleet is configured with, four
 * simulated devices bound to the admin: two in device group A, two in B. Alice is in user group
 * A (which sees device group A), Bob in B.
 *
 * - Alice never sees B's devices: `GET devices`, `/d/<B's id>/` 404, `POST actions` naming a B
 *   device 404 with nothing run (the simulated devices record every call), the wall socket's
 *   `watch` of B's id answers nothing while A's tile gets pictures; in Chromium her devices list
 *   and wall hold A's devices only. Linking B's device group to her group shows them on her next
 *   request.
 * - Sign-in through the provider's own pages in Chromium lands signed in on the devices page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { FleetJob } from '@kvm/protocol';
import { startOidcProvider } from '../fleet/src/oidc/test-provider';
import { Browser } from './fixtures/browser';
import { freePort } from './fixtures/server';
import { byTestId } from './fixtures/console';
import {
  clientFor,
  createUser,
  linkGroups,
  signInBrowser,
  startFleetWorld,
  visibleDevices,
  type FleetWorld,
} from './fixtures/fleet';
import type { FleetHttp } from './fixtures/fleet-http';
import { startSims, type SimHandle } from './fixtures/fleet-sims';
import { WallWatch } from './fixtures/wall-watch';

const OIDC_USER = {
  sub: 'carol-sub-1',
  email: 'carol@idp.test',
  preferred_username: 'carol',
  password: 'carol-idp-pw1',
};

let w: FleetWorld;
let oidc: Awaited<ReturnType<typeof startOidcProvider>>;
let sims: SimHandle[];
let groupA: SimHandle[];
let groupB: SimHandle[];
let alice: FleetHttp;
let aliceAccount: Awaited<ReturnType<typeof createUser>>;
let aliceGroups: { userGroup: string; deviceGroup: string };
let bGroups: { userGroup: string; deviceGroup: string };
let browser: Browser;
let page: Page;

const ids = (list: Array<{ id: string }>) => list.map((d) => d.id).sort();

/** The ids of the device rows the devices page shows now. */
async function rowIds(p: Page): Promise<string[]> {
  return (
    await p
      .locator('[data-testid="device-row"]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-device-id') ?? ''))
  ).sort();
}

describe('fleet: a user of group A never sees group B; OpenID Connect sign-in', () => {
  beforeAll(async () => {
    // the provider knows the fleet's callback before the fleet runs: its port is chosen first
    const port = await freePort();
    oidc = await startOidcProvider({
      users: [OIDC_USER],
      redirectUris: [`https://127.0.0.1:${port}/cloud-basic/v1/oidc/callback`],
    });
    try {
      w = await startFleetWorld({
        replicas: 1,
        ports: [port],
        config: {
          oidc: {
            issuer: oidc.issuer,
            client_id: oidc.clientId,
            client_secret: oidc.clientSecret,
            name: 'Test IdP',
          },
        },
      });
    } catch (err) {
      await oidc.stop();
      throw err;
    }
    w.cloud.own(oidc, (o) => o.stop());
    sims = await startSims(w, { count: 4 });
    groupA = sims.slice(0, 2);
    groupB = sims.slice(2, 4);
    aliceAccount = await createUser(w, 'alice.a');
    const bob = await createUser(w, 'bob.b');
    aliceGroups = await linkGroups(w, 'a', [aliceAccount.id], ids(groupA));
    bGroups = await linkGroups(w, 'b', [bob.id], ids(groupB));
    alice = await clientFor(w, aliceAccount);
    browser = await Browser.launch({ ignoreHttpsErrors: true });
    page = await browser.page();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await w?.cloud.dispose();
  }, 60_000);

  it("the API: GET devices, /d/<id>/, POST actions and the wall socket never reach B's devices", async () => {
    expect(ids(await visibleDevices(alice))).toEqual(ids(groupA));
    expect(ids(await visibleDevices(w.admin))).toEqual(ids(sims));
    const b = groupB[0]!;
    const a = groupA[0]!;
    // the console through the fleet
    expect((await alice.call('GET', `/d/${a.id}/api/info`)).status).toBe(200);
    expect((await alice.call('GET', `/d/${b.id}/`)).status).toBe(404);
    expect((await alice.call('GET', `/d/${b.id}/api/info`)).status).toBe(404);
    // an action naming a B device: refused before anything runs, on A's device too
    for (const devices of [[b.id], [a.id, b.id]]) {
      const r = await alice.apiCall('POST', 'actions', { action: 'power', devices });
      expect(r.status, r.text).toBe(404);
    }
    for (const s of sims) expect(s.calls('POST', '/api/atx/click?button=power')).toBe(0);
    // nor a group she does not see
    const byGroup = await alice.apiCall('POST', 'actions', {
      action: 'power',
      group: bGroups.deviceGroup,
    });
    // refused before anything runs, as a made-up id would be: nothing tells her it exists
    expect(byGroup.status, byGroup.text).toBe(404);
    for (const s of sims) expect(s.calls('POST', '/api/atx/click?button=power')).toBe(0);
    // her own device: runs
    const own = await alice.api<{ job: FleetJob }>('POST', 'actions', {
      action: 'power',
      devices: [a.id],
    });
    await expect
      .poll(() => a.calls('POST', '/api/atx/click?button=power'), { timeout: 30_000 })
      .toBe(1);
    expect(own.job.kind).toBe('action');

    // the wall: B's id watched beside A's gets nothing while A's tile gets pictures
    const wall = await WallWatch.open(w.cloud.a.url, alice.cookie, w.ca);
    try {
      wall.send({ t: 'watch', ids: [b.id, a.id] });
      await wall.until(`a picture of ${a.id}`, () => wall.picturesOf(a.id).length >= 2, 30_000);
      expect(wall.picturesOf(b.id)).toEqual([]);
      expect(wall.states.filter((s) => s.id === b.id)).toEqual([]);
      expect(wall.states.some((s) => s.id === a.id && s.online)).toBe(true);
      // the admin's wall does get B's device (the id is real)
      const adminWall = await WallWatch.open(w.cloud.a.url, w.admin.cookie, w.ca);
      try {
        adminWall.send({ t: 'watch', ids: [b.id] });
        await adminWall.until(
          `a picture of ${b.id}`,
          () => adminWall.picturesOf(b.id).length > 0,
          30_000,
        );
      } finally {
        adminWall.close();
      }
      expect(wall.picturesOf(b.id)).toEqual([]);
    } finally {
      wall.close();
    }
  }, 120_000);

  it("in Chromium: her devices list and her wall hold A's devices only", async () => {
    await signInBrowser(browser, w.cloud.a.url, aliceAccount);
    await page.goto(`${w.cloud.a.url}/devices`);
    await byTestId(page, 'view-devices').waitFor({ state: 'visible', timeout: 30_000 });
    await expect.poll(() => rowIds(page), { timeout: 20_000 }).toEqual(ids(groupA));
    await expect
      .poll(() => byTestId(page, 'device-total').textContent(), { timeout: 10_000 })
      .toMatch(/\b2\b/);

    await page.goto(`${w.cloud.a.url}/wall`);
    const tile = (id: string) => page.locator(`[data-testid="wall-tile"][data-device-id="${id}"]`);
    for (const s of groupA) {
      // each of her tiles shows a picture
      await expect
        .poll(() => tile(s.id).locator('[data-testid="wall-image"]').getAttribute('src'), {
          timeout: 30_000,
        })
        .toMatch(/^blob:/);
    }
    expect(await page.locator('[data-testid="wall-tile"]').count()).toBe(groupA.length);
    for (const s of groupB) expect(await tile(s.id).count()).toBe(0);
  }, 120_000);

  it("B's device group linked to her group: she sees B's devices on her next request", async () => {
    await w.admin.api('PATCH', `groups/users/${aliceGroups.userGroup}`, {
      device_groups: [aliceGroups.deviceGroup, bGroups.deviceGroup],
    });
    expect(ids(await visibleDevices(alice))).toEqual(ids(sims));
    expect((await alice.call('GET', `/d/${groupB[0]!.id}/api/info`)).status).toBe(200);
    await w.admin.api('PATCH', `groups/users/${aliceGroups.userGroup}`, {
      device_groups: [aliceGroups.deviceGroup],
    });
    expect(ids(await visibleDevices(alice))).toEqual(ids(groupA));
  }, 60_000);

  it("OpenID Connect: signs in through the provider's own pages and lands on the devices page", async () => {
    const fresh = await Browser.launch({ ignoreHttpsErrors: true });
    try {
      const p = await fresh.page();
      await p.goto(`${w.cloud.a.url}/signin`);
      await byTestId(p, 'signin-oidc').click();
      // the provider's login page, then its consent page
      await p.waitForURL((u) => u.origin === new URL(oidc.issuer).origin, { timeout: 20_000 });
      await p.locator('input[name="login"]').fill(OIDC_USER.sub);
      await p.locator('input[name="password"]').fill(OIDC_USER.password);
      await p.getByRole('button', { name: 'Sign in' }).click();
      // the provider's consent page
      await p.getByRole('button', { name: 'Continue' }).click({ timeout: 20_000 });
      await p.waitForURL(`${w.cloud.a.url}/devices`, { timeout: 30_000 });
      await byTestId(p, 'view-devices').waitFor({ state: 'visible', timeout: 20_000 });
      // signed in as the provider's user (a new account, role user, no devices)
      const me = await p.evaluate(async () => {
        const r = await fetch('/cloud-basic/v1/me');
        return (await r.json()) as {
          result: { username: string; role: string; oidc_issuer: string };
        };
      });
      expect(me.result.role).toBe('user');
      expect(me.result.oidc_issuer).toBe(oidc.issuer);
      expect(me.result.username).toMatch(/^carol/);
      expect(await rowIds(p)).toEqual([]);
    } finally {
      await fresh.close();
    }
  }, 120_000);
});
