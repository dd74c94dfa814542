#!/usr/bin/env node
// `npm run device-vm`: boots the device VM (docs/hardware.md "The device VM"), a QEMU VM (TCG)
// running our server with `--target gadget` on Debian's kernel, its USB gadget plugged into the
// same kernel's host side by dummy_hcd. Builds the image if needed (scripts/build-device-vm.mjs),
// makes the data disk if missing, prints the console's URL and the observer's lines; Ctrl-C
// powers it off cleanly (the server stopped, the data disk synced and unmounted). A JSON line
// typed on its input is sent to the observer as a command (scripts/device/observer.mjs).
//
// Options: --port <n> (the host's loopback port forwarded to the server's 8443; default 8444),
// --data <file> (the data disk, default .cache/device-vm/data.img), --target <name> (the
// server's --target, default gadget), --memory <MB>, --quiet (no observer lines), --webrtc-ports
// <MIN-MAX|auto|none> (UDP ports of the host's loopback forwarded for the console's WebRTC,
// auto: 8 free ones; they need slirp's restrict=off, so the default is none: restrict=on).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { MEMORY_MB, freeUdpRange, mkfsArgs, qemuArgs } from './device/qemu.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, '.cache', 'device-vm');

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8444' },
    data: { type: 'string', default: join(dir, 'data.img') },
    target: { type: 'string', default: 'gadget' },
    memory: { type: 'string', default: String(MEMORY_MB) },
    quiet: { type: 'boolean', default: false },
    'webrtc-ports': { type: 'string', default: 'none' },
  },
});
// UDP ports forwarded for the server's WebRTC: MIN-MAX, auto (8 free ones) or none.
const webrtcPorts =
  values['webrtc-ports'] === 'none'
    ? null
    : values['webrtc-ports'] === 'auto'
      ? await freeUdpRange()
      : values['webrtc-ports'].split('-').map(Number);
if (webrtcPorts && !(webrtcPorts.length === 2 && webrtcPorts[0] < webrtcPorts[1])) {
  console.error(`device-vm: --webrtc-ports: not MIN-MAX, auto or none: ${values['webrtc-ports']}`);
  process.exit(2);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`device-vm: --port: not a port: ${values.port}`);
  process.exit(2);
}
const dataImage = resolve(values.data);

const build = spawnSync(process.execPath, [join(root, 'scripts', 'build-device-vm.mjs')], {
  stdio: 'inherit',
});
if (build.status !== 0) process.exit(build.status ?? 1);
if (!existsSync(dataImage)) {
  mkdirSync(dirname(dataImage), { recursive: true });
  const mk = spawnSync('mke2fs', mkfsArgs(dataImage), { stdio: 'inherit' });
  if (mk.status !== 0) {
    console.error('device-vm: mke2fs failed (apt-get install e2fsprogs)');
    process.exit(1);
  }
  console.log(`device-vm: made the data disk ${dataImage}`);
}

const tmp = mkdtempSync(join(tmpdir(), 'device-vm-'));
const consoleLog = join(dir, 'console.log');
const observerSocket = join(tmp, 'observer.sock');
const started = performance.now();
const qemu = spawn(
  'qemu-system-x86_64',
  qemuArgs({
    dir,
    dataImage,
    port,
    consoleLog,
    observerSocket,
    target: values.target,
    memoryMb: Number(values.memory),
    webrtcPorts,
  }),
  { stdio: ['ignore', 'inherit', 'inherit'] },
);
console.log(
  `device-vm: booting (console log: ${consoleLog}; WebRTC UDP ${webrtcPorts ? webrtcPorts.join('-') : 'none'})`,
);

let observer = null;
const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
function attach() {
  const sock = connect(observerSocket);
  sock.on('error', () => {
    if (qemu.exitCode === null) setTimeout(attach, 200);
  });
  sock.on('connect', () => {
    observer = sock;
    let pending = '';
    sock.on('data', (chunk) => {
      pending += chunk.toString('utf8');
      for (let i; (i = pending.indexOf('\n')) >= 0;) {
        const line = pending.slice(0, i).trim();
        pending = pending.slice(i + 1);
        if (!line) continue;
        if (line.includes('"server-ready"')) {
          console.log(`device-vm: server ready after ${seconds()} s: https://127.0.0.1:${port}/`);
        }
        if (!values.quiet) console.log(`observer: ${line}`);
      }
    });
  });
}
attach();

// Lines typed here go to the observer as commands, e.g. {"id":1,"cmd":"devices"}.
let typed = '';
process.stdin.on('data', (chunk) => {
  typed += chunk.toString('utf8');
  for (let i; (i = typed.indexOf('\n')) >= 0;) {
    const line = typed.slice(0, i).trim();
    typed = typed.slice(i + 1);
    if (!line) continue;
    if (observer && line.startsWith('{')) observer.write(`${line}\n`);
    else console.log('device-vm: type an observer command as JSON: {"id":1,"cmd":"devices"}');
  }
});
process.stdin.on('error', () => {});

let stopping = false;
function powerOff() {
  if (stopping) {
    qemu.kill('SIGKILL');
    return;
  }
  stopping = true;
  console.log('device-vm: powering off (Ctrl-C again to kill QEMU)');
  if (observer) observer.write('{"id":"poweroff","cmd":"poweroff"}\n');
  else qemu.kill('SIGTERM');
  setTimeout(() => qemu.kill('SIGKILL'), 30_000).unref();
}
process.on('SIGINT', powerOff);
process.on('SIGTERM', powerOff);

qemu.on('exit', (code, signal) => {
  rmSync(tmp, { recursive: true, force: true });
  console.log(`device-vm: QEMU exited (${signal ?? code}) after ${seconds()} s`);
  process.exit(code === 0 ? 0 : 1);
});
