/**
 * What a job asks of one device (docs/cloud.md "What the fleet calls on a device"): the device's
 * own API, through deviceRequest (fleet/src/tunnel/client.ts) as the job's user. Each step that
 * is not answered 2xx throws an Error with the device's kvmd `error_msg` (or its HTTP status).
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { compareVersions, formatVersion, keyByCode, type FleetAction } from '@kvm/protocol';
import { ValidatorError } from '../errors';
import { answerError, answerResult, type DeviceAnswer, type DeviceRequest } from '../tunnel/client';

/** One request to the job's device (deviceRequest bound to the device and the user). */
export type DeviceCall = (req: DeviceRequest) => Promise<DeviceAnswer>;

/** A short call's silence limit; an upload's (the window keeps moving while it goes). */
export const CALL_TIMEOUT_MS = 30_000;
export const UPLOAD_IDLE_MS = 60_000;
/** The most keys a shortcut presses (the device's own limit). */
export const SHORTCUT_MAX_KEYS = 16;

/** A file a job sends: its name on the device, size, and where the fleet keeps it. */
export interface JobFile {
  name: string;
  size: number;
  path: string;
}

export interface ActionArgs {
  file_id?: string;
  cdrom?: boolean;
  keys?: string;
  mac?: string;
}

const MAC_RE = /^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/;

/** The args an action needs, checked before the job starts (400). */
export function checkActionArgs(action: FleetAction, args: ActionArgs): ActionArgs {
  switch (action) {
    case 'shortcut': {
      const keys = (args.keys ?? '')
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean);
      if (keys.length === 0) throw new ValidatorError('args.keys: a list of key names is needed');
      if (keys.length > SHORTCUT_MAX_KEYS) {
        throw new ValidatorError(`args.keys: at most ${SHORTCUT_MAX_KEYS} keys`);
      }
      const bad = keys.find((k) => !keyByCode(k));
      if (bad) throw new ValidatorError(`args.keys: ${JSON.stringify(bad)} is not a key name`);
      return { keys: keys.join(',') };
    }
    case 'wol':
      if (args.mac !== undefined && !MAC_RE.test(args.mac)) {
        throw new ValidatorError('args.mac must be a MAC address (aa:bb:cc:dd:ee:ff)');
      }
      return args.mac !== undefined ? { mac: args.mac } : {};
    case 'msd_mount':
      if (typeof args.file_id !== 'string') throw new ValidatorError('args.file_id is required');
      if (args.cdrom !== undefined && typeof args.cdrom !== 'boolean') {
        throw new ValidatorError('args.cdrom must be true or false');
      }
      return { file_id: args.file_id, cdrom: args.cdrom ?? true };
    default:
      return {};
  }
}

async function expectOk(
  call: DeviceCall,
  req: Omit<DeviceRequest, 'timeoutMs'> & { timeoutMs?: number },
): Promise<DeviceAnswer> {
  const a = await call({ timeoutMs: CALL_TIMEOUT_MS, ...req });
  if (a.status < 200 || a.status >= 300) throw new Error(answerError(a));
  return a;
}

/** One action on one device; resolves when done, throws with the reason it failed. */
export async function runAction(
  call: DeviceCall,
  action: FleetAction,
  args: ActionArgs,
  file: JobFile | null,
): Promise<void> {
  const q = encodeURIComponent;
  switch (action) {
    case 'power':
    case 'power_long':
    case 'reset':
      await expectOk(call, { method: 'POST', path: `/api/atx/click?button=${action}` });
      return;
    case 'reboot':
      await expectOk(call, { method: 'GET', path: '/api/upgrade/reboot' });
      return;
    case 'shortcut':
      await expectOk(call, {
        method: 'POST',
        path: `/api/hid/events/send_shortcut?keys=${q(args.keys ?? '')}`,
      });
      return;
    case 'wol': {
      let macs: string[];
      if (args.mac) macs = [args.mac];
      else {
        const list = answerResult<{ devices?: Array<{ mac?: string }> }>(
          await expectOk(call, { method: 'GET', path: '/api/wol/devices' }),
        );
        macs = (list.devices ?? []).map((d) => d.mac ?? '').filter(Boolean);
        if (macs.length === 0) throw new Error('The device has no Wake-on-LAN entries');
      }
      for (const mac of macs) {
        await expectOk(call, { method: 'POST', path: `/api/wol/wake?mac=${q(mac)}` });
      }
      return;
    }
    case 'msd_mount': {
      if (!file) throw new Error('The image is gone from the fleet');
      const state = answerResult<{
        storage?: { images?: Record<string, { complete?: boolean; size?: number }> };
      }>(await expectOk(call, { method: 'GET', path: '/api/msd' }));
      const there = state.storage?.images?.[file.name];
      if (!(there && there.complete !== false && there.size === file.size)) {
        await expectOk(call, {
          method: 'POST',
          path: `/api/msd/write?image=${q(file.name)}`,
          headers: { 'content-type': 'application/octet-stream' },
          body: { stream: createReadStream(file.path), length: file.size },
          timeoutMs: UPLOAD_IDLE_MS,
        });
      }
      await expectOk(call, {
        method: 'POST',
        path: `/api/msd/set_params?image=${q(file.name)}&cdrom=${args.cdrom === false ? 0 : 1}`,
      });
      await expectOk(call, { method: 'POST', path: '/api/msd/set_connected?connected=1' });
      return;
    }
    case 'msd_unmount':
      await expectOk(call, { method: 'POST', path: '/api/msd/set_connected?connected=0' });
      return;
  }
}

/** `POST /api/upgrade/upload`: the package as the multipart field `file`, streamed. */
export async function uploadPackage(call: DeviceCall, file: JobFile): Promise<void> {
  const boundary = `----kvmfleet${Date.now().toString(16)}${Math.random().toString(16).slice(2)}`;
  const pre = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const post = Buffer.from(`\r\n--${boundary}--\r\n`);
  const stream = Readable.from(
    (async function* () {
      yield pre;
      for await (const c of createReadStream(file.path)) yield c as Buffer;
      yield post;
    })(),
  );
  await expectOk(call, {
    method: 'POST',
    path: '/api/upgrade/upload',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: { stream, length: pre.byteLength + file.size + post.byteLength },
    timeoutMs: UPLOAD_IDLE_MS,
  });
}

/** `POST /api/upgrade/start?save_config=true`: throws unless it says "Upgrade started". */
export async function startUpgrade(call: DeviceCall): Promise<void> {
  const a = await expectOk(call, { method: 'POST', path: '/api/upgrade/start?save_config=true' });
  const r = answerResult<{ status?: string; message?: string }>(a);
  if (r.status !== 'Upgrade started') {
    throw new Error(r.message || r.status || 'The device did not start the upgrade');
  }
}

/** `GET /api/upgrade/status` as far as the health check reads it. */
export interface UpgradeStatusView {
  in_progress?: boolean;
  last_upgrade?: { result?: string; to_version?: string; reason?: string | null } | null;
}

export async function upgradeStatus(call: DeviceCall): Promise<UpgradeStatusView> {
  return answerResult<UpgradeStatusView>(
    await expectOk(call, { method: 'GET', path: '/api/upgrade/status' }),
  );
}

/** The same release in either spelling (`V0.2.0` / `0.2.0`). */
export function sameVersion(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b || formatVersion(a) === null) return false;
  return compareVersions(a, b) === 0 && formatVersion(a) === formatVersion(b);
}
