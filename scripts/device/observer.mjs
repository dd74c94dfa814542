// The device VM's observer: runs inside the VM (node, no packages) and reports what the host
// side of the VM's kernel sees of our USB gadget, the oracle of the device-VM tests (as the QEMU
// guest's serial lines are for the QEMU target). docs/hardware.md, "The device VM".
//
// One JSON object a line on its serial port (argv[2], ttyS1; host side a unix socket), `t` = the
// VM's monotonic clock in ms (fractional):
//   {ev:'hello', t, uptime}                        the observer started
//   {ev:'server-ready', t, uptime, status}         the server answered https://127.0.0.1:8443
//   {ev:'usb-add'|'usb-remove', t, dev, busnum, devnum, idVendor, idProduct, bcdDevice,
//        serial, manufacturer, product, speed}    a USB device (sysfs name: busnum-devpath)
//   {ev:'input-add'|'input-remove', t, dev, name, uniq, usb, idVendor, idProduct, led}
//   {ev:'input', t, dev, ts, type, code, value}    one evdev event (ts: the event's own time, s)
//   {ev:'block-add'|'block-change'|'block-remove', t, dev, size, vendor, model, removable}
//   {re:id, ok:true, ...} / {re:id, ok:false, error}  the answer to a command
// Commands (host -> VM, one JSON object a line): {id, cmd, ...}
//   ping; devices; led {led: caps|num|scroll, on, dev?}; read {dev, bytes?};
//   stop-polling {dev?} / resume-polling; rss (the server's processes and the VM's memory);
//   sh {script, timeoutMs?} (a busybox shell command: code, stdout, stderr); poweroff.
//   hdmi {signal?: current|no_signal|no_lock|out_of_range, timings?: '1920x1080p60'}: vivid's
//     HDMI source side ({setAt, controls}); edid: what the capture device holds ({hex});
//     capture-fps {frames?}: frames a second read from /dev/video0 ({frames, ms, fps, width, height}).
//   gpio-watch {line, chip?} / gpio-unwatch {line, chip?}: a gpio-sim line's level, read every
//     millisecond: {ev:'gpio-edge', chip, line, value, t, gapMs} on each change and
//     {ev:'gpio-pulse', chip, line, ms, boundMs, t} when it falls back (ms: rise to fall as
//     sampled, boundMs: the sampling gaps at both edges, the most the true length can differ);
//   gpio-pull {line, pull: 'pull-up'|'pull-down', chip?}: the simulated side drives the line
//     (an input's level, an LED edge); gpio-lines {chip?}: the chip's lines and levels.
//   Sound (issue 24), on the host side's USB sound card (snd-usb-audio's card of our gadget):
//   sound-cards (every ALSA card: number, id, USB parent); host-tone {hz, ms} (plays a sine
//   there in the background: answers `t` when the player started); host-tone-stop;
//   host-record {ms, hz?} (records that long: the dominant frequency and its level, the level of
//   hz, and `heardT`, the VM time of the first 20 ms window with hz at 0.05 or more). Both take
//   `device` (an ALSA name such as hw:UAC2Gadget,0: the board's side of the card) instead.
//   Camera (issue 24), the host side's USB webcam (uvcvideo's node of our gadget): webcams
//   (video nodes with a USB device above them); webcam-capture {frames, timeoutMs?, dev?}
//   (ffmpeg's v4l2 input, YUYV 640x480: per frame the mean luma and a sha256 prefix, and
//   firstFrameMs from the capture's start to its first whole frame).
// USB, input and block devices are polled every 200 ms (there is no udev in the VM): a scan
// costs ~18 ms of a TCG vCPU, so every 50 ms took a third of one from the server under test.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { ReadStream } from 'node:tty';

const TTY = process.argv[2] ?? '/dev/ttyS1';
const POLL_MS = 200;
const SERVER = { host: '127.0.0.1', port: 8443, path: '/api/auth/check' };

const now = () => Number(process.hrtime.bigint()) / 1e6;
const uptime = () => Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]);

// ---- the serial port ------------------------------------------------------------------------

const ttyFd = openSync(TTY, 'r+');
const input = new ReadStream(ttyFd);
input.setRawMode(true);

/** One line out. writeSync on the tty: lines never interleave, and the order is the events'. */
function emit(obj) {
  const line = JSON.stringify({ ...obj, t: obj.t ?? Math.round(now() * 1000) / 1000 }) + '\n';
  for (let buf = Buffer.from(line); buf.length;) {
    try {
      buf = buf.subarray(writeSync(ttyFd, buf));
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
    }
  }
}

// ---- sysfs helpers --------------------------------------------------------------------------

/** A file's text as it is (a process's files: gone as it ends), or null. */
function attrRaw(path) {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return null;
  }
}

/** A sysfs attribute without its newline, or null. */
function attr(path) {
  return attrRaw(path)?.trim() ?? null;
}

function list(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The USB device (sysfs directory with idVendor) above a sysfs path, or null. */
function usbParent(path) {
  let dir;
  try {
    dir = realpathSync(path);
  } catch {
    return null;
  }
  for (; dir.startsWith('/sys/devices/') && dir !== '/sys/devices';) {
    if (attr(`${dir}/idVendor`) !== null) {
      return {
        usb: dir.split('/').pop(),
        idVendor: attr(`${dir}/idVendor`),
        idProduct: attr(`${dir}/idProduct`),
      };
    }
    dir = dir.slice(0, dir.lastIndexOf('/'));
  }
  return null;
}

// ---- USB devices ----------------------------------------------------------------------------

/** key: name@devnum (a re-enumeration on the same port is a new device) -> its facts. */
const usbDevices = new Map();

function scanUsb() {
  const seen = new Set();
  for (const name of list('/sys/bus/usb/devices')) {
    if (name.includes(':')) continue; // an interface, not a device
    const dir = `/sys/bus/usb/devices/${name}`;
    const devnum = attr(`${dir}/devnum`);
    if (devnum === null) continue;
    const key = `${name}@${devnum}`;
    seen.add(key);
    if (usbDevices.has(key)) continue;
    const idVendor = attr(`${dir}/idVendor`);
    if (idVendor === null) continue; // still being set up: next round
    const dev = {
      dev: name,
      busnum: Number(attr(`${dir}/busnum`)),
      devnum: Number(devnum),
      idVendor,
      idProduct: attr(`${dir}/idProduct`),
      bcdDevice: attr(`${dir}/bcdDevice`),
      serial: attr(`${dir}/serial`),
      manufacturer: attr(`${dir}/manufacturer`),
      product: attr(`${dir}/product`),
      speed: attr(`${dir}/speed`),
    };
    usbDevices.set(key, dev);
    emit({ ev: 'usb-add', ...dev });
  }
  for (const [key, dev] of usbDevices) {
    if (!seen.has(key)) {
      usbDevices.delete(key);
      emit({ ev: 'usb-remove', ...dev });
    }
  }
}

// ---- input devices and their events ---------------------------------------------------------

/** eventN -> { info, fd } for the USB input devices being read. */
const inputs = new Map();
const EVENT_SIZE = 24; // struct input_event on x86-64: timeval (2 x 8), u16 type, u16 code, s32

function readEvents(name, fd) {
  const buf = Buffer.alloc(EVENT_SIZE * 64);
  const loop = async () => {
    for (;;) {
      let n;
      try {
        ({ bytesRead: n } = await fd.read(buf, 0, buf.length, null));
      } catch {
        break; // ENODEV: the device is gone
      }
      if (n <= 0) break;
      const t = Math.round(now() * 1000) / 1000;
      for (let off = 0; off + EVENT_SIZE <= n; off += EVENT_SIZE) {
        emit({
          ev: 'input',
          t,
          dev: name,
          ts: Number(buf.readBigInt64LE(off)) + Number(buf.readBigInt64LE(off + 8)) / 1e6,
          type: buf.readUInt16LE(off + 16),
          code: buf.readUInt16LE(off + 18),
          value: buf.readInt32LE(off + 20),
        });
      }
    }
    await fd.close().catch(() => {});
  };
  void loop();
}

function scanInput() {
  const seen = new Set();
  for (const name of list('/sys/class/input')) {
    if (!name.startsWith('event')) continue;
    seen.add(name);
    if (inputs.has(name)) continue;
    const sys = `/sys/class/input/${name}/device`;
    const parent = usbParent(sys);
    const leds = attr(`${sys}/capabilities/led`);
    const info = {
      dev: name,
      name: attr(`${sys}/name`),
      uniq: attr(`${sys}/uniq`),
      ...(parent ?? { usb: null, idVendor: null, idProduct: null }),
      led: leds !== null && leds !== '0',
    };
    const entry = { info, fd: null };
    inputs.set(name, entry);
    emit({ ev: 'input-add', ...info });
    // Only the gadget's side (USB) is read: the VM has no other input devices worth a thread.
    if (parent) {
      open(`/dev/input/${name}`, 'r+').then(
        (fd) => {
          entry.fd = fd;
          if (!inputs.has(name)) void fd.close();
          else readEvents(name, fd);
        },
        (err) => emit({ ev: 'error', dev: name, error: err.message }),
      );
    }
  }
  for (const [name, entry] of inputs) {
    if (!seen.has(name)) {
      inputs.delete(name);
      emit({ ev: 'input-remove', ...entry.info });
    }
  }
}

// ---- block devices --------------------------------------------------------------------------

const blocks = new Map();

/**
 * A block device's sysfs link (../devices/.../hostN/.../block/sdb): it changes when the device
 * behind the name does (a new SCSI host on re-enumeration), so the facts read at add are kept
 * for as long as it stays the same. Each scan then costs a readlink and the size per device:
 * under TCG every sysfs read is dear (the USB parent walks a dozen directories), and the
 * server the tests measure shares the VM's two vCPUs with this.
 */
function blockLink(name) {
  try {
    return readlinkSync(`/sys/block/${name}`);
  } catch {
    return null;
  }
}

function scanBlock() {
  const seen = new Set();
  for (const name of list('/sys/block')) {
    if (!/^(sd|sr)/.test(name)) continue;
    const link = blockLink(name);
    if (link === null) continue; // gone between the listing and now
    seen.add(name);
    const sys = `/sys/block/${name}`;
    const size = Number(attr(`${sys}/size`) ?? 0) * 512;
    const old = blocks.get(name);
    if (old && old.link === link) {
      if (old.info.size !== size) {
        old.info = { ...old.info, size };
        emit({ ev: 'block-change', ...old.info });
      }
      continue;
    }
    if (old) emit({ ev: 'block-remove', ...old.info });
    const info = {
      dev: name,
      size,
      vendor: attr(`${sys}/device/vendor`),
      model: attr(`${sys}/device/model`),
      removable: attr(`${sys}/removable`) === '1',
      ...(usbParent(`${sys}/device`) ?? { usb: null }),
    };
    blocks.set(name, { link, info });
    emit({ ev: 'block-add', ...info });
  }
  for (const [name, { info }] of blocks) {
    if (!seen.has(name)) {
      blocks.delete(name);
      emit({ ev: 'block-remove', ...info });
    }
  }
}

function scan() {
  try {
    scanUsb();
    scanInput();
    scanBlock();
  } catch (err) {
    emit({ ev: 'error', error: String(err?.stack ?? err) });
  }
}

// ---- commands -------------------------------------------------------------------------------

const LEDS = { num: 0, caps: 1, scroll: 2 };
const EV_SYN = 0;
const EV_LED = 0x11;
/** usbhid interfaces unbound by stop-polling, bound again by resume-polling. */
const unbound = new Set();

function inputEvent(type, code, value) {
  const b = Buffer.alloc(EVENT_SIZE);
  b.writeUInt16LE(type, 16);
  b.writeUInt16LE(code, 18);
  b.writeInt32LE(value, 20);
  return b;
}

/** The gadget's keyboard: a USB input device with LEDs (or the one named). */
function keyboardNode(dev) {
  for (const { info } of inputs.values()) {
    if (dev ? info.dev === dev : info.usb && info.led) return info.dev;
  }
  throw new Error(dev ? `no input device ${dev}` : 'no USB keyboard with LEDs');
}

async function readBlock(dev, bytes) {
  if (!/^[a-z0-9]+$/.test(dev ?? '')) throw new Error('read: dev is a block device name (sr0)');
  writeFileSync('/proc/sys/vm/drop_caches', '3');
  const fh = await open(`/dev/${dev}`, 'r').catch((err) => {
    throw new Error(err.errno === -123 ? `no medium in /dev/${dev}` : err.message);
  });
  const hash = createHash('sha256');
  const buf = Buffer.alloc(1 << 20);
  const limit = bytes ?? Infinity;
  let size = 0;
  const started = now();
  try {
    while (size < limit) {
      const want = Math.min(buf.length, limit - size);
      const { bytesRead } = await fh.read(buf, 0, want, size);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      size += bytesRead;
    }
  } finally {
    await fh.close();
  }
  const ms = now() - started;
  return {
    size,
    sha256: hash.digest('hex'),
    ms: Math.round(ms),
    mbPerS: ms > 0 ? Math.round((size / 1e6 / (ms / 1000)) * 100) / 100 : null,
  };
}

/** The usbhid interfaces of a USB device (or of every non-root device). */
function hidInterfaces(dev) {
  return list('/sys/bus/usb/drivers/usbhid').filter(
    (n) => /^\d+-[\d.]+:\d+\.\d+$/.test(n) && (!dev || n.startsWith(`${dev}:`)),
  );
}

/**
 * Read synchronously, in one turn: ~150 processes' files through the threadpool took four round
 * trips each, and on a starved TCG VM that outlasted the harness's 30 s wait for the answer.
 */
function rss() {
  const procs = [];
  for (const pid of list('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = (attrRaw(`/proc/${pid}/cmdline`) ?? '').split('\0');
    if (!cmd.some((a) => a.includes('server/dist/'))) continue;
    const status = attrRaw(`/proc/${pid}/status`) ?? '';
    const kb = Number(/VmRSS:\s*(\d+)/.exec(status)?.[1] ?? 0);
    procs.push({ pid: Number(pid), cmd: cmd.filter(Boolean).join(' '), rssMb: kb / 1024 });
  }
  const meminfo = attrRaw('/proc/meminfo') ?? '';
  const mb = (key) => Number(new RegExp(`${key}:\\s*(\\d+)`).exec(meminfo)?.[1] ?? 0) / 1024;
  return { procs, memTotalMb: mb('MemTotal'), memAvailableMb: mb('MemAvailable') };
}

// ---- camera: the host side's USB webcam ----------------------------------------------------

/** Video capture nodes of the host side's USB devices (uvcvideo's first node of each). */
function webcams() {
  return list('/sys/class/video4linux')
    .filter((n) => /^video\d+$/.test(n) && attr(`/sys/class/video4linux/${n}/index`) === '0')
    .map((n) => ({
      dev: n,
      name: attr(`/sys/class/video4linux/${n}/name`),
      ...(usbParent(`/sys/class/video4linux/${n}/device`) ?? { usb: null }),
    }))
    .filter((w) => w.usb);
}

/** Captures `frames` frames from the host side's webcam: what each one holds. */
function webcamCapture({ frames = 10, timeoutMs = 60000, dev, width = 640, height = 480 }) {
  const cam = dev ?? webcams().at(-1)?.dev;
  if (!cam) return Promise.reject(new Error('no USB webcam on the host side'));
  const size = width * height;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const args = [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'v4l2',
      '-input_format',
      'yuyv422',
      '-video_size',
      `${width}x${height}`,
      '-i',
      `/dev/${cam}`,
      '-frames:v',
      String(frames),
      '-f',
      'rawvideo',
      '-pix_fmt',
      'gray',
      'pipe:1',
    ];
    const p = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = Buffer.alloc(0);
    let err = '';
    let firstFrameMs = null;
    const out = [];
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stderr.on('data', (c) => (err = (err + c).slice(-2000)));
    p.stdout.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      while (buf.length >= size) {
        const y = buf.subarray(0, size);
        buf = buf.subarray(size);
        if (firstFrameMs === null) firstFrameMs = performance.now() - started;
        let sum = 0;
        for (let i = 0; i < size; i += 1) sum += y[i];
        out.push({
          t: now(),
          mean: Math.round((sum / size) * 10) / 10,
          sha: createHash('sha256').update(y).digest('hex').slice(0, 12),
        });
      }
    });
    p.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.on('close', (code) => {
      clearTimeout(timer);
      if (out.length === 0)
        return reject(new Error(`no frame from /dev/${cam} (ffmpeg ${code}): ${err.trim()}`));
      resolve({ dev: cam, frames: out, firstFrameMs, code, stderr: err.trim() });
    });
  });
}

// ---- sound: the host side's USB sound card ----------------------------------------------------

/** ALSA cards: number, id, and the USB device above them (the host side's card of our gadget). */
function soundCards() {
  return list('/sys/class/sound')
    .filter((n) => /^card\d+$/.test(n))
    .map((n) => ({
      card: Number(n.slice(4)),
      id: attr(`/sys/class/sound/${n}/id`),
      ...(usbParent(`/sys/class/sound/${n}/device`) ?? { usb: null }),
    }));
}

/** The host side's card of the gadget: the one sound card with a USB device above it. */
function hostCard() {
  const usb = soundCards().filter((c) => c.usb);
  if (usb.length === 0) throw new Error('no USB sound card on the host side');
  return usb[usb.length - 1];
}

let tonePlayer = null;

function stopTone() {
  if (tonePlayer && tonePlayer.exitCode === null) tonePlayer.kill('SIGKILL');
  tonePlayer = null;
}

/** Level (0..1, 1 = full-scale sine) of hz in mono samples x[from..from+n) (Goertzel, Hann). */
function goertzel(x, from, n, hz, rate) {
  const w = (2 * Math.PI * hz) / rate;
  const coeff = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < n; i++) {
    const hann = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    const s0 = x[from + i] * hann + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return (Math.sqrt(Math.max(0, s1 * s1 + s2 * s2 - coeff * s1 * s2)) * 4) / n;
}

/** Interleaved s16le stereo -> mono floats. */
function monoOf(buf) {
  const frames = Math.floor(buf.length / 4);
  const x = new Float32Array(frames);
  for (let i = 0; i < frames; i++)
    x[i] = (buf.readInt16LE(i * 4) + buf.readInt16LE(i * 4 + 2)) / 65536;
  return x;
}

/** What a recording holds: the dominant frequency (50..8000 Hz) and levels. */
function analyse(x, rate, hz, startedT) {
  const WIN = 960; // 20 ms
  let heardT = null;
  let hzLevel = 0;
  if (hz) {
    for (let off = 0; off + WIN <= x.length; off += WIN) {
      const l = goertzel(x, off, WIN, hz, rate);
      hzLevel = Math.max(hzLevel, l);
      if (heardT === null && l >= 0.05) heardT = startedT + (off / rate) * 1000;
    }
  }
  // the last 100 ms with sound: coarse scan, then around the peak
  const n = Math.min(4800, x.length);
  const from = x.length - n;
  let best = { hz: 0, level: 0 };
  const scan = (lo, hi, step) => {
    for (let f = lo; f <= hi; f += step) {
      const l = goertzel(x, from, n, f, rate);
      if (l > best.level) best = { hz: f, level: l };
    }
  };
  scan(50, 8000, 25);
  if (best.hz) scan(Math.max(50, best.hz - 25), best.hz + 25, 1);
  let sum = 0;
  for (let i = from; i < x.length; i++) sum += x[i] * x[i];
  return {
    dominantHz: best.hz,
    dominantLevel: Math.round(best.level * 1000) / 1000,
    hzLevel: Math.round(hzLevel * 1000) / 1000,
    heardT,
    rms: n ? Math.round(Math.sqrt(sum / n) * 1000) / 1000 : 0,
  };
}

// ---- gpio-sim (issue 24: ATX over GPIO) -----------------------------------------------------

/** The device /init makes (scripts/device/contents.mjs GPIO_SIM). */
const GPIO_SIM = '/sys/kernel/config/gpio-sim';

/** A gpio-sim line's sysfs folder (`value`, `pull`), found by the line's configfs name. */
function simLine(chip = 'kvm-atx', line) {
  const dev = attr(`${GPIO_SIM}/${chip}/dev_name`);
  if (!dev) throw new Error(`no gpio-sim chip ${chip}`);
  for (const bank of list(`${GPIO_SIM}/${chip}`).filter((b) => b.startsWith('bank'))) {
    const chipName = attr(`${GPIO_SIM}/${chip}/${bank}/chip_name`);
    for (const l of list(`${GPIO_SIM}/${chip}/${bank}`).filter((n) => /^line\d+$/.test(n))) {
      const offset = Number(l.slice(4));
      if (
        attr(`${GPIO_SIM}/${chip}/${bank}/${l}/name`) === line ||
        String(offset) === String(line)
      ) {
        return {
          chipName,
          offset,
          dir: `/sys/devices/platform/${dev}/${chipName}/sim_gpio${offset}`,
        };
      }
    }
  }
  throw new Error(`gpio-sim chip ${chip} has no line ${line}`);
}

/** chip/line -> the watcher polling it. */
const gpioWatches = new Map();

function gpioWatch(chip = 'kvm-atx', line) {
  const key = `${chip}/${line}`;
  if (gpioWatches.has(key)) return gpioWatches.get(key).info;
  const { dir, offset, chipName } = simLine(chip, line);
  const read = () => Number(readFileSync(`${dir}/value`, 'latin1').trim());
  let last = now();
  let value = read();
  let rise = null;
  // An edge came between the last read and this one: after the last read began and before
  // this one ended. Dated at this read's end, with that whole window as its gap: a read the VM
  // stalls in (TCG, a loaded host) widens the gap instead of dating the edge too early.
  const timer = setInterval(() => {
    const began = now();
    const v = read();
    const t = now();
    const gapMs = t - last;
    last = began;
    if (v === value) return;
    value = v;
    emit({ ev: 'gpio-edge', chip, line, value: v, t, gapMs: Math.round(gapMs * 1000) / 1000 });
    if (v === 1) rise = { t, gapMs };
    else if (rise) {
      emit({
        ev: 'gpio-pulse',
        chip,
        line,
        t,
        ms: Math.round((t - rise.t) * 1000) / 1000,
        boundMs: Math.round((rise.gapMs + gapMs) * 1000) / 1000,
      });
      rise = null;
    }
  }, 1);
  const info = { chip, line, chipName, offset, value };
  gpioWatches.set(key, { timer, info });
  return info;
}

// ---- the HDMI source side (vivid, docs/hardware.md "Capture") -------------------------------

const VIDEO = '/dev/video0';
/** vivid's "DV Timings Signal Mode" menu. */
const SIGNAL_MODES = { current: 0, no_signal: 1, no_lock: 2, out_of_range: 3, selected: 4 };

function v4l2ctl(args, timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    execFile(
      'v4l2-ctl',
      ['-d', VIDEO, ...args],
      { timeout: timeoutMs, encoding: 'utf8' },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`v4l2-ctl ${args.join(' ')}: ${stderr.trim() || err.message}`))
          : resolve(stdout),
    );
  });
}

/** The index of a `dv_timings` menu entry (`1920x1080p60`). */
async function timingsIndex(name) {
  const menus = await v4l2ctl(['--list-ctrls-menus']);
  const block = menus.slice(menus.indexOf(' dv_timings 0x'));
  const m = new RegExp(`^\\s*(\\d+): ${name.replace(/[^0-9a-z]/gi, '')}$`, 'm').exec(block);
  if (!m) throw new Error(`hdmi: vivid has no timings ${name}`);
  return Number(m[1]);
}

/**
 * hdmi {signal?: current|no_signal|no_lock|out_of_range, timings?: '1920x1080p60'}: the remote
 * computer's side of the HDMI cable. `timings` sends those (mode "Selected DV Timings"); `signal`
 * sets the mode alone. vivid sends a source-change event for each. Answers the mode and timings.
 */
async function hdmi({ signal, timings }) {
  if (timings !== undefined) {
    const index = await timingsIndex(String(timings));
    await v4l2ctl(['-c', `dv_timings_signal_mode=${SIGNAL_MODES.selected},dv_timings=${index}`]);
  } else {
    if (!(signal in SIGNAL_MODES))
      throw new Error('hdmi: signal is current, no_signal, no_lock or out_of_range');
    await v4l2ctl(['-c', `dv_timings_signal_mode=${SIGNAL_MODES[signal]}`]);
  }
  // the VM's clock when the source changed (the bench's start)
  const setAt = Math.round(now() * 1000) / 1000;
  const controls = await v4l2ctl(['-C', 'dv_timings_signal_mode,dv_timings']);
  return { setAt, controls: controls.trim() };
}

/**
 * capture-fps {frames?}: frames a second read from the capture device itself (mmap streaming,
 * v4l2-ctl's own count), at the timings it has; fails with EBUSY while the server streams.
 */
async function captureFps({ frames = 120 }) {
  const started = now();
  await v4l2ctl(
    ['--stream-mmap', `--stream-count=${Number(frames)}`, '--stream-to=/dev/null'],
    120_000,
  );
  const ms = now() - started;
  const fmt = await v4l2ctl(['--get-fmt-video']);
  const size = /Width\/Height\s*:\s*(\d+)\/(\d+)/.exec(fmt);
  return {
    frames: Number(frames),
    ms: Math.round(ms),
    fps: Math.round((Number(frames) / (ms / 1000)) * 10) / 10,
    width: Number(size?.[1] ?? 0),
    height: Number(size?.[2] ?? 0),
  };
}

const COMMANDS = {
  webcams: async () => ({ webcams: webcams() }),
  'webcam-capture': (args) => webcamCapture(args),
  'sound-cards': async () => ({ cards: soundCards() }),
  'host-tone': async ({ hz, ms, device }) => {
    if (!(hz >= 20 && hz <= 20000) || !(ms > 0 && ms <= 120000))
      throw new Error('host-tone: hz, ms');
    const card = device ? { device } : hostCard();
    stopTone();
    const t = Math.round(now() * 1000) / 1000;
    tonePlayer = spawn(
      'ffmpeg',
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-re',
        '-f',
        'lavfi',
        '-i',
        // lavfi's sine (a table, amplitude 1/8) times 4: amplitude 0.5. Not aevalsrc: its
        // expression, evaluated per sample, runs 3x slower than real time under TCG, and a
        // player that cannot keep up stalls the board's card (ALSA's 10 s EIO) and the VM.
        `sine=frequency=${hz}:sample_rate=48000:duration=${ms / 1000},volume=4`,
        '-ac',
        '2',
        '-c:a',
        'pcm_s16le',
        '-f',
        'alsa',
        device ?? `hw:${card.card},0`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    tonePlayer.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
    tonePlayer.on('exit', (code) => emit({ ev: 'host-tone-end', code, stderr }));
    return { t, card };
  },
  'host-tone-stop': async () => {
    stopTone();
    return {};
  },
  'host-record': ({ ms, hz, device }) =>
    new Promise((resolve, reject) => {
      if (!(ms > 0 && ms <= 60000)) return reject(new Error('host-record: ms 1..60000'));
      const card = device ? { device } : hostCard();
      const startedT = now();
      execFile(
        'arecord',
        [
          '-q',
          '-D',
          device ?? `hw:${card.card},0`,
          '-f',
          'S16_LE',
          '-r',
          '48000',
          '-c',
          '2',
          '-t',
          'raw',
          '-d',
          String(Math.max(1, Math.ceil(ms / 1000))),
        ],
        { encoding: 'buffer', maxBuffer: 64 << 20, timeout: ms + 30000 },
        (err, stdout, stderr) => {
          if (err && !stdout?.length)
            return reject(new Error(`arecord: ${stderr.toString() || err.message}`));
          const x = monoOf(stdout);
          resolve({ card, bytes: stdout.length, ...analyse(x, 48000, hz, startedT) });
        },
      );
    }),
  ping: async () => ({ uptime: uptime() }),
  devices: async () => ({
    usb: [...usbDevices.values()],
    input: [...inputs.values()].map((e) => e.info),
    block: [...blocks.values()].map((b) => b.info),
  }),
  led: async ({ led, on, dev }) => {
    if (!(led in LEDS)) throw new Error('led: caps, num or scroll');
    const node = keyboardNode(dev);
    const fh = await open(`/dev/input/${node}`, 'w');
    try {
      await fh.write(
        Buffer.concat([inputEvent(EV_LED, LEDS[led], on ? 1 : 0), inputEvent(EV_SYN, 0, 0)]),
      );
    } finally {
      await fh.close();
    }
    return { dev: node };
  },
  read: async ({ dev, bytes }) => readBlock(dev, bytes),
  'stop-polling': async ({ dev }) => {
    const ifaces = hidInterfaces(dev);
    for (const i of ifaces) {
      await writeFile('/sys/bus/usb/drivers/usbhid/unbind', i);
      unbound.add(i);
    }
    return { interfaces: ifaces };
  },
  'resume-polling': async () => {
    const done = [];
    for (const i of unbound) {
      // A re-enumerated device has new interfaces (bound already): skip the gone ones.
      await writeFile('/sys/bus/usb/drivers/usbhid/bind', i).then(
        () => done.push(i),
        () => {},
      );
      unbound.delete(i);
    }
    return { interfaces: done };
  },
  rss,
  sh: ({ script, timeoutMs }) =>
    new Promise((resolve, reject) => {
      if (typeof script !== 'string') return reject(new Error('sh: script is a string'));
      execFile(
        '/bin/sh',
        ['-c', script],
        { timeout: timeoutMs ?? 20_000, maxBuffer: 1 << 20, encoding: 'utf8' },
        (err, stdout, stderr) =>
          resolve({
            code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
            stdout,
            stderr,
          }),
      );
    }),
  'gpio-watch': async ({ chip, line }) => gpioWatch(chip, line),
  'gpio-unwatch': async ({ chip = 'kvm-atx', line }) => {
    const w = gpioWatches.get(`${chip}/${line}`);
    if (w) clearInterval(w.timer);
    gpioWatches.delete(`${chip}/${line}`);
    return {};
  },
  'gpio-pull': async ({ chip, line, pull }) => {
    if (pull !== 'pull-up' && pull !== 'pull-down')
      throw new Error('gpio-pull: pull-up or pull-down');
    const { dir } = simLine(chip, line);
    await writeFile(`${dir}/pull`, pull);
    return { value: Number((await readFile(`${dir}/value`, 'latin1')).trim()) };
  },
  'gpio-lines': async ({ chip = 'kvm-atx' }) => {
    const lines = [];
    for (const bank of list(`${GPIO_SIM}/${chip}`).filter((b) => b.startsWith('bank'))) {
      for (const l of list(`${GPIO_SIM}/${chip}/${bank}`).filter((n) => /^line\d+$/.test(n))) {
        const name = attr(`${GPIO_SIM}/${chip}/${bank}/${l}/name`);
        const { dir, offset, chipName } = simLine(chip, name || l.slice(4));
        lines.push({
          chipName,
          offset,
          name,
          value: Number(attr(`${dir}/value`)),
          pull: attr(`${dir}/pull`),
        });
      }
    }
    return { lines };
  },
  hdmi,
  'capture-fps': captureFps,
  edid: async () => ({
    hex: (await v4l2ctl(['--get-edid=format=hex']).catch(() => '')).replace(/\s+/g, ''),
  }),
  poweroff: async () => {
    setTimeout(() => spawn('/bin/device-poweroff', [], { stdio: 'inherit' }), 100);
    return {};
  },
};

async function handle(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    emit({ ev: 'error', error: `not JSON: ${line.slice(0, 200)}` });
    return;
  }
  const fn = COMMANDS[msg?.cmd];
  try {
    if (!fn) throw new Error(`unknown command ${String(msg?.cmd)}`);
    emit({ re: msg.id ?? null, ok: true, ...(await fn(msg)) });
  } catch (err) {
    emit({ re: msg?.id ?? null, ok: false, error: err.message });
  }
}

let pending = '';
input.on('data', (chunk) => {
  pending += chunk.toString('utf8');
  for (let i; (i = pending.search(/[\r\n]/)) >= 0;) {
    const line = pending.slice(0, i).trim();
    pending = pending.slice(i + 1);
    if (line) void handle(line);
  }
  if (pending.length > 1 << 20) pending = '';
});

// ---- the server's readiness -----------------------------------------------------------------

function probeServer() {
  const req = request(
    { ...SERVER, method: 'GET', rejectUnauthorized: false, timeout: 5000 },
    (res) => {
      res.resume();
      const up = uptime();
      emit({ ev: 'server-ready', uptime: up, status: res.statusCode });
      process.stdout.write(`server ready at ${up} s (https://10.0.2.15:${SERVER.port}/)\n`);
    },
  );
  const retry = () => setTimeout(probeServer, 250);
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', retry);
  req.end();
}

emit({ ev: 'hello', uptime: uptime() });
scan();
setInterval(scan, POLL_MS);
probeServer();
