/**
 * The jobs' tests' fake devices: bound as a device binds, connected as a FAKE agent
 * (agents/test-kit.ts) whose device server answers the calls of docs/cloud.md "What the fleet
 * calls on a device", with upgrades that come back on the new version, roll back, or never.
 */
import type { FleetJobDetail } from '@kvm/protocol';
import { FakeAgent, waitFor } from '../agents/test-kit';
import { api, bindByCode, identity, result, type Kit } from '../test-kit';
import { Throttle } from '../throttle';

/** A fake device: its agent, and a device server with the calls the jobs make. */
export class Dev {
  agent: FakeAgent | null = null;
  calls: string[] = [];
  version = '0.2.0';
  images = new Map<string, number>();
  uploaded = 0;
  lastUpgrade: Record<string, unknown> | null = null;
  inProgress = false;
  /** Paths whose answer never comes (a device that hangs). */
  silentPaths: string[] = [];
  /** How long an upgrade takes to restart the device's agent. */
  restartMs = 50;
  constructor(
    readonly url: string,
    readonly id: string,
    readonly secret: string,
    readonly mac: string,
    readonly serial: string,
    /** What an upgrade does: come back on the new version, roll back, or never come back. */
    readonly upgrade: 'ok' | 'rollback' | 'gone' = 'ok',
  ) {}

  async connect(): Promise<void> {
    this.agent = await (
      await FakeAgent.connect(this.url, {
        id: this.id,
        secret: this.secret,
        mac: this.mac,
        serial: this.serial,
        version: this.version,
        discardBodies: true,
        serve: (r) => this.serve(r),
      })
    ).ready();
  }

  private serve(r: { method: string; path: string; bodyBytes: number }) {
    this.calls.push(`${r.method} ${r.path}`);
    const u = new URL(r.path, 'http://d');
    // a device that hangs on these: the answer never comes
    if (this.silentPaths.some((p) => u.pathname.startsWith(p))) return new Promise<never>(() => {});
    const okr = (result: unknown) => ({ status: 200, body: { ok: true, result } });
    switch (`${r.method} ${u.pathname}`) {
      case 'POST /api/atx/click':
      case 'POST /api/hid/events/send_shortcut':
      case 'POST /api/msd/set_params':
      case 'POST /api/msd/set_connected':
        return okr({});
      case 'GET /api/wol/devices':
        return okr({ devices: [{ name: 'a', mac: '02:00:00:00:00:aa' }] });
      case 'POST /api/wol/wake':
        return okr({ sent: { mac: u.searchParams.get('mac') } });
      case 'GET /api/msd': {
        const images: Record<string, unknown> = {};
        for (const [n, size] of this.images) images[n] = { complete: true, size };
        return okr({ storage: { images } });
      }
      case 'POST /api/msd/write':
        this.images.set(u.searchParams.get('image')!, r.bodyBytes);
        return okr({ image: { name: u.searchParams.get('image'), size: r.bodyBytes } });
      case 'POST /api/upgrade/upload':
        this.uploaded = r.bodyBytes;
        return okr({ filename: 'update.pkg', size: r.bodyBytes });
      case 'POST /api/upgrade/start':
        this.inProgress = true;
        setTimeout(() => void this.restart(), this.restartMs);
        return okr({ status: 'Upgrade started' });
      case 'GET /api/upgrade/status':
        return okr({ enabled: true, in_progress: this.inProgress, last_upgrade: this.lastUpgrade });
      default:
        return { status: 404, body: { ok: false, result: { error: 'NotFound', error_msg: 'no' } } };
    }
  }

  private async restart(): Promise<void> {
    this.agent?.close();
    if (this.upgrade === 'gone') return;
    this.inProgress = false;
    if (this.upgrade === 'ok') {
      this.lastUpgrade = { result: 'success', from_version: this.version, to_version: 'V0.3.0' };
      this.version = '0.3.0';
    } else {
      this.lastUpgrade = {
        result: 'failed',
        to_version: 'V0.3.0',
        reason: 'V0.3.0 was not ready within 20 s',
      };
    }
    await new Promise((r) => setTimeout(r, 30));
    await this.connect();
  }
}

/** Every fake device made (the test file closes them). */
export const devices: Dev[] = [];

/** `n` devices bound to the account of `cookie` by code, named `<prefix>-00`..., connected. */
export async function bindDevices(
  kit: Kit,
  url: string,
  cookie: string,
  n: number,
  prefix: string,
  plan: Dev['upgrade'][] = [],
  setup: (d: Dev, i: number) => void = () => undefined,
) {
  // the tests bind dozens of devices from one address: the bind-code limit is not under test
  (kit.fleet.devices as unknown as { codesByAddress: Throttle }).codesByAddress = new Throttle(
    'bind codes',
    { max: 100_000, windowS: 60, lockS: 1 },
  );
  const out: Dev[] = [];
  for (let i = 0; i < n; i++) {
    const who = identity({ name: `${prefix}-${String(i).padStart(2, '0')}` });
    const b = await bindByCode(kit, cookie, who);
    const d = new Dev(url, b.device_id, b.secret, who.mac, who.serial, plan[i] ?? 'ok');
    setup(d, i);
    await d.connect();
    devices.push(d);
    out.push(d);
  }
  return out;
}

/** The job once it ended and none of its devices runs any more. */
export async function finished(
  kit: Kit,
  cookie: string,
  id: string,
  timeoutMs = 60_000,
): Promise<FleetJobDetail> {
  return waitFor(
    async () => {
      const d = result<FleetJobDetail>(await api(kit, 'GET', `/jobs/${id}`, undefined, { cookie }));
      // a stopped job's running devices finish after it
      return d.job.state !== 'running' && d.job.counts.running === 0 ? d : null;
    },
    timeoutMs,
    `job ${id} to finish`,
  );
}
