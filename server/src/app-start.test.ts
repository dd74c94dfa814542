/**
 * What a testbed server's start touches: its device network (the netns driver) is made at first
 * use, not by the start itself. The cloud's device identity asked the network's status as the
 * context was made, which made both namespaces, dnsmasq and udhcpc at every start and removed
 * them at every close (0.6-0.9 s of each route test's 2 s on a loaded machine).
 */
import { afterEach, expect, it } from 'vitest';
import { netnsNames } from './drivers/network/netns';
import { findExecutable } from './process/supervisor';
import { listNamespaces } from './platform/netns/test-support';
import { AppPerTest } from './test-helpers';

const namespaces =
  process.getuid?.() === 0 && ['ip', 'dnsmasq', 'udhcpc'].every((c) => findExecutable(c) !== null);

const apps = new AppPerTest();
afterEach(() => apps.stop());

it('makes no network namespace as it starts; the cloud knows eth0 by its address all the same', async () => {
  const { app, dataDir, token } = await apps.start();
  const names = netnsNames(dataDir);
  if (namespaces) expect(await listNamespaces()).not.toContain(names.dev);

  const cloud = await app.inject({ url: '/api/cloud/status', headers: { token } });
  expect(cloud.statusCode).toBe(200);
  const device = (cloud.json() as { result: { device: { mac: string } } }).result.device;
  if (!namespaces) return;
  expect(device.mac).toBe(names.mac);
  expect(await listNamespaces()).not.toContain(names.dev);

  // The first use makes them, with the address the cloud already gave.
  const net = await app.inject({ url: '/api/system/get_network_config', headers: { token } });
  expect(net.statusCode).toBe(200);
  expect(net.json()).toMatchObject({ result: { config: { mac_address: names.mac } } });
  expect(await listNamespaces()).toContain(names.dev);
  await apps.stop();
  expect(await listNamespaces()).not.toContain(names.dev);
});
