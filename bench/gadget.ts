/**
 * `npm run bench -- gadget`: one JSON object of the gadget target's figures (issue 23), measured
 * in the device VM (docs/hardware.md "The device VM"): QEMU under TCG (no KVM here), our server
 * inside with `--target gadget`, its USB gadget plugged into the same kernel's host side by
 * dummy_hcd, and the observer reporting what that host side sees over the VM's second serial
 * port. Every figure is TCG's: a real board runs the same code natively, several times faster.
 *
 * - device_vm_boot_s: QEMU started -> the observer's `server-ready` (DeviceVm.start's bootMs).
 * - observer_rtt_p50_ms: an observer `ping` round trip (host -> serial -> VM -> serial -> host),
 *   the transport's share of every *_to_host figure below (about half of it: one way).
 * - key_to_host_p50/p99_ms: a key sent as a real client sends it, kvmd's **binary** protocol on
 *   /api/ws (`[0x01][state]"KeyA"`, wire-protocol.md 2), to the observer's line of that key's
 *   evdev event (EV_KEY KEY_A, value 1/0) arriving here. KeyA down and up alternate, one every
 *   GAP_MS (20 ms: the host polls the keyboard every bInterval), each waited for before the
 *   next, so none queues behind another.
 * - key_to_vm_observer_p50/p99_ms: the same key events to the observer reading them inside the
 *   VM (its line's `t`), the VM's monotonic clock mapped onto ours by the ping with the shortest
 *   round trip (vm_clock_bound_ms: half that trip, the most the mapping can be off): the key's
 *   latency without the serial line's way back.
 * - key_server_p50/p99_ms: the server's share, inside the VM: GadgetHid's sendKey call to the
 *   kernel taking the report (`kvm_hid_gadget_write_seconds` of /api/export/prometheus/metrics,
 *   over those same key events: key_server_samples is its count).
 * - mouse_to_host_p50_ms: absolute moves (`[0x03][x][y]`, alternating two points) to the
 *   observer's EV_ABS ABS_X event (mouse_to_vm_observer_p50_ms: to its read in the VM, as above).
 * - server_rss_mb: the server process's RSS inside the VM (observer `rss`), at idle after the
 *   login and the console-less HID session above (launcher_rss_mb: its supervising launcher).
 * - msd_upload_mb_per_s, msd_read_mb_per_s: an image of random bytes (32 MB, short 8 MB)
 *   uploaded through POST /api/msd/write, connected as a **flash** drive (read-write,
 *   set_params cdrom=0), read whole by the host side from its block device (observer `read`,
 *   page cache dropped first); the bench fails unless the sha256 matches the upload.
 * - gadget_rebuild_ms: POST /api/hid/set_params?mouse_output=usb_rel (then usb, alternating) to
 *   the host side's input-add of the new mouse (the gadget re-enumerates); median of 4 (2 short),
 *   ending where it started (absolute).
 * - *_samples: how many measurements each figure is taken over; calibration_ms etc. the host's
 *   speed (lib machineSpeed), measured before the VM boots.
 *
 * The server's certificate is self-signed: the requests here (DeviceVm.request, and the
 * upload's and socket's own options) skip its check, scoped to this bench.
 */
import { createHash, randomBytes } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import WebSocket from 'ws';
import { DeviceVm, type DeviceVmEvent } from '../e2e/fixtures/device-vm';
import { machineSpeed, median, note, percentile, round, runMarks, sized } from './lib';
import { atxFigures } from './gadget-atx';
import { audioFigures } from './gadget-audio';
import { cameraFigures } from './gadget-camera';
import { videoFigures } from './gadget-video';

const PASSWORD = 'benchpass';
const KEY_EVENTS = sized(400, 40);
const MOUSE_EVENTS = sized(200, 20);
const PINGS = sized(100, 10);
const GAP_MS = 20;
const MSD_BYTES = sized(32, 8) * 1024 * 1024;
const REBUILDS = sized(4, 2);
/** One event through TCG; a loaded machine stalls the VM for seconds at times. */
const EVENT_TIMEOUT_MS = 15_000;
const EV_KEY = 1;
const EV_ABS = 3;
const KEY_A = 30;
const ABS_X = 0;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A kvmd JSON answer's result; throws with the envelope on anything but 200. */
async function api<T = unknown>(
  vm: DeviceVm,
  token: string,
  path: string,
  method = 'POST',
): Promise<T> {
  const res = await vm.request(path, { method, headers: { token } });
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { result: T }).result;
}

/** Polls `fn` until it is truthy (every 200 ms, up to `ms`); `last` says what it saw last. */
async function until<T>(
  what: string,
  ms: number,
  fn: () => Promise<T | false>,
  last: () => unknown = () => undefined,
): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (performance.now() > deadline) {
      throw new Error(`timed out after ${ms} ms: ${what}; last: ${JSON.stringify(last())}`);
    }
    await sleep(200);
  }
}

interface Hid {
  online: boolean;
  keyboard: { online: boolean };
  mouse: { online: boolean; outputs: { active: string } };
}

/** Polls GET /api/hid until `pred` holds (60 s); the error shows the last state. */
async function waitHid(
  vm: DeviceVm,
  token: string,
  what: string,
  pred: (h: Hid) => boolean,
): Promise<void> {
  let last: Hid | null = null;
  await until(
    what,
    60_000,
    async () => pred((last = await api<Hid>(vm, token, '/api/hid', 'GET'))),
    () => last,
  );
}

/** The upload: a raw body with its Content-Length, as /api/msd/write wants it. */
function upload(vm: DeviceVm, token: string, name: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: vm.port,
        path: `/api/msd/write?image=${encodeURIComponent(name)}`,
        method: 'POST',
        headers: {
          token,
          'content-type': 'application/octet-stream',
          'content-length': String(body.length),
        },
        rejectUnauthorized: false,
        timeout: 600_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(performance.now() - started)
            : reject(new Error(`msd/write: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('msd/write: timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** The prometheus summary's quantile, in ms, and its count. */
function summaryOf(text: string, name: string): { p50: number; p99: number; count: number } {
  const get = (re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN);
  return {
    p50: get(new RegExp(`^${name}\\{quantile="0.5"\\} (\\S+)$`, 'm')) * 1000,
    p99: get(new RegExp(`^${name}\\{quantile="0.99"\\} (\\S+)$`, 'm')) * 1000,
    count: get(new RegExp(`^${name}_count (\\S+)$`, 'm')),
  };
}

function keyFrame(pressed: boolean): Buffer {
  return Buffer.concat([Buffer.from([0x01, pressed ? 1 : 0]), Buffer.from('KeyA', 'ascii')]);
}

function moveFrame(x: number, y: number): Buffer {
  const b = Buffer.alloc(5);
  b[0] = 0x03;
  b.writeInt16BE(x, 1);
  b.writeInt16BE(y, 3);
  return b;
}

async function openSocket(vm: DeviceVm, token: string): Promise<WebSocket> {
  const ws = new WebSocket(`wss://127.0.0.1:${vm.port}/api/ws?stream=0`, {
    headers: { token },
    rejectUnauthorized: false,
  });
  // the first message (`loop`) says the server took the socket
  await new Promise<void>((resolve, reject) => {
    ws.once('message', () => resolve());
    ws.once('error', reject);
    ws.once('close', (code) => reject(new Error(`/api/ws closed (${code})`)));
  });
  ws.on('error', (err) => note(`gadget: /api/ws: ${err.message}`));
  return ws;
}

/**
 * Sends frames one every GAP_MS, each waited for on the host side. `host`: to the observer's
 * line arriving here (ms); `vm`: to the observer reading the event inside the VM, its clock
 * mapped onto ours by `offsetMs` (see main), so without the serial line's way back.
 */
async function paced(
  vm: DeviceVm,
  ws: WebSocket,
  n: number,
  frame: (i: number) => Buffer,
  seen: (i: number) => (e: DeviceVmEvent) => boolean,
  what: string,
  offsetMs: number,
): Promise<{ host: number[]; vm: number[] }> {
  const out = { host: [] as number[], vm: [] as number[] };
  for (let i = 0; i < n; i++) {
    const since = vm.mark();
    const sent = performance.now();
    ws.send(frame(i));
    const e = await vm.waitFor(seen(i), EVENT_TIMEOUT_MS, { since, what: `${what} ${i}` });
    out.host.push(e.hostT - sent);
    out.vm.push(e.t - offsetMs - sent);
    const left = sent + GAP_MS - performance.now();
    if (left > 0) await sleep(left);
  }
  return out;
}

async function main(): Promise<void> {
  const speed = machineSpeed();
  note('gadget: booting the device VM (TCG)');
  const vm = await DeviceVm.start();
  try {
    const bootS = vm.bootMs / 1000;
    note(`gadget: server ready after ${bootS} s`);
    await vm.request(`/api/init/init?password=${encodeURIComponent(PASSWORD)}`);
    const login = await vm.request('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }).toString(),
    });
    if (login.status !== 200) throw new Error(`login: ${login.status} ${login.body}`);
    const token = (JSON.parse(login.body) as { result: { token: string } }).result.token;

    // The host side has the keyboard and mouse, and the server says they are online.
    const kbd = await vm.waitFor(
      (e) => e.ev === 'input-add' && !!e['usb'] && e['led'] === true,
      60_000,
      {
        what: 'the gadget keyboard on the host side',
      },
    );
    const mouse = await vm.waitFor(
      (e) => e.ev === 'input-add' && !!e['usb'] && e['led'] === false,
      60_000,
      { what: 'the gadget mouse on the host side' },
    );
    await waitHid(vm, token, 'hid online', (h) => h.online && h.keyboard.online && h.mouse.online);

    note(`gadget: observer ping x${PINGS}`);
    // The VM's monotonic clock (`t` of its lines) against ours: the ping with the shortest round
    // trip, its answer taken as written at the trip's midpoint; off by at most half that trip.
    const rtts: number[] = [];
    let clock = { offset: 0, bound: Infinity };
    for (let i = 0; i < PINGS; i++) {
      const t0 = performance.now();
      const reply = await vm.command('ping');
      const rtt = reply.hostT - t0;
      rtts.push(rtt);
      if (rtt / 2 < clock.bound) clock = { offset: reply.t - (t0 + rtt / 2), bound: rtt / 2 };
    }

    const ws = await openSocket(vm, token);
    note(`gadget: ${KEY_EVENTS} key events, ${GAP_MS} ms apart`);
    const keys = await paced(
      vm,
      ws,
      KEY_EVENTS,
      (i) => keyFrame(i % 2 === 0),
      (i) => (e) =>
        e.ev === 'input' &&
        e['dev'] === kbd['dev'] &&
        e['type'] === EV_KEY &&
        e['code'] === KEY_A &&
        e['value'] === (i % 2 === 0 ? 1 : 0),
      'KeyA',
      clock.offset,
    );
    const metrics = await vm.request('/api/export/prometheus/metrics', { headers: { token } });
    if (metrics.status !== 200) throw new Error(`metrics: ${metrics.status}`);
    const server = summaryOf(metrics.body, 'kvm_hid_gadget_write_seconds');
    if (!(server.count > 0)) throw new Error('no kvm_hid_gadget_write_seconds in the metrics');

    note(`gadget: ${MOUSE_EVENTS} absolute moves`);
    const moves = await paced(
      vm,
      ws,
      MOUSE_EVENTS,
      (i) => moveFrame(i % 2 ? 16000 : -16000, 0),
      () => (e) =>
        e.ev === 'input' &&
        e['dev'] === mouse['dev'] &&
        e['type'] === EV_ABS &&
        e['code'] === ABS_X,
      'ABS_X',
      clock.offset,
    );
    ws.close();
    await until('the socket closed', 10_000, async () => ws.readyState === WebSocket.CLOSED);

    // Idle: the HID session is over; give the server a moment to settle, then its RSS.
    await sleep(2000);
    let t0 = performance.now();
    await vm.command('ping', {}, 120_000);
    note(`gadget: observer ping after the session: ${Math.round(performance.now() - t0)} ms`);
    t0 = performance.now();
    const rss = (await vm.command('rss', {}, 120_000)) as unknown as {
      procs: Array<{ pid: number; cmd: string; rssMb: number }>;
    };
    note(`gadget: rss in ${Math.round(performance.now() - t0)} ms: ${JSON.stringify(rss.procs)}`);
    const serverProc = rss.procs.find((p) => /server\/dist\/main/.test(p.cmd)) ?? rss.procs.at(-1);
    const launcherProc = rss.procs.find((p) => p !== serverProc);
    if (!serverProc) throw new Error('rss: no server process in the VM');

    note(`gadget: ${MSD_BYTES / 1048576} MB image through /api/msd/write`);
    const image = randomBytes(MSD_BYTES);
    const sha = createHash('sha256').update(image).digest('hex');
    const uploadMs = await upload(vm, token, 'bench.img', image);
    await api(vm, token, '/api/msd/set_params?image=bench.img&cdrom=0');
    const plugged = vm.mark();
    await api(vm, token, '/api/msd/set_connected?connected=1');
    const disk = await vm.waitFor(
      (e) =>
        (e.ev === 'block-add' || e.ev === 'block-change') &&
        /^sd/.test(String(e['dev'])) &&
        !!e['usb'] &&
        e['size'] === MSD_BYTES,
      60_000,
      { since: plugged, what: 'the flash drive on the host side' },
    );
    const read = (await vm.command('read', { dev: disk['dev'] }, 300_000)) as unknown as {
      size: number;
      sha256: string;
      ms: number;
      mbPerS: number;
    };
    if (read.size !== MSD_BYTES || read.sha256 !== sha) {
      throw new Error(
        `the host side read ${read.size} bytes, sha256 ${read.sha256}; uploaded ${MSD_BYTES}, ${sha}`,
      );
    }
    await api(vm, token, '/api/msd/set_connected?connected=0');

    note(`gadget: ${REBUILDS} mouse mode switches`);
    const rebuilds: number[] = [];
    for (let i = 0; i < REBUILDS; i++) {
      const output = i % 2 === 0 ? 'usb_rel' : 'usb';
      const since = vm.mark();
      const t0 = performance.now();
      await api(vm, token, `/api/hid/set_params?mouse_output=${output}`);
      const added = await vm.waitFor(
        (e) => e.ev === 'input-add' && !!e['usb'] && e['led'] === false,
        60_000,
        { since, what: `the ${output} mouse on the host side` },
      );
      rebuilds.push(added.hostT - t0);
      await waitHid(
        vm,
        token,
        `hid online on ${output}`,
        (h) => h.online && h.mouse.online && h.mouse.outputs.active === output,
      );
    }

    const atx = await atxFigures(vm, token);
    const video = await videoFigures(vm, token);
    const audio = await audioFigures(vm);
    const camera = await cameraFigures(vm);

    const ms = (v: number): number => round(v, 1);
    console.log(
      JSON.stringify({
        ...runMarks(),
        device_vm_boot_s: round(bootS, 1),
        server_rss_mb: round(serverProc.rssMb, 1),
        launcher_rss_mb: round(launcherProc?.rssMb ?? 0, 1),
        observer_rtt_p50_ms: ms(median(rtts)),
        observer_rtt_samples: rtts.length,
        key_to_host_p50_ms: ms(percentile(keys.host, 50)),
        key_to_host_p99_ms: ms(percentile(keys.host, 99)),
        key_to_host_samples: keys.host.length,
        key_to_vm_observer_p50_ms: ms(percentile(keys.vm, 50)),
        key_to_vm_observer_p99_ms: ms(percentile(keys.vm, 99)),
        vm_clock_bound_ms: ms(clock.bound),
        key_server_p50_ms: round(server.p50, 2),
        key_server_p99_ms: round(server.p99, 2),
        key_server_samples: server.count,
        mouse_to_host_p50_ms: ms(percentile(moves.host, 50)),
        mouse_to_host_samples: moves.host.length,
        mouse_to_vm_observer_p50_ms: ms(percentile(moves.vm, 50)),
        msd_upload_mb_per_s: round(MSD_BYTES / 1e6 / (uploadMs / 1000), 2),
        msd_read_mb_per_s: round(read.mbPerS, 2),
        msd_read_samples: 1,
        msd_image_mb: MSD_BYTES / 1048576,
        gadget_rebuild_ms: Math.round(median(rebuilds)),
        gadget_rebuild_samples: rebuilds.length,
        ...atx,
        ...video,
        ...audio,
        ...camera,
        ...speed,
      }),
    );
  } catch (err) {
    note(`gadget: console tail:\n${(await vm.consoleLog()).slice(-3000)}`);
    throw err;
  } finally {
    await vm.stop();
  }
}

await main();
