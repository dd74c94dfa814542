import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readProcArgv } from '../../process/supervisor';
import { QemuMachine, qemuArgs, runPaths, type MachinePower } from './machine';
import { guestImagePaths } from './guest';
import { ensureGuestImage, processesMentioning, readSerial, until } from './test-support';

/**
 * The guest's boot under TCG, from QEMU's start to `guest ready` on the serial log, measured on
 * a 2-core machine: 11.3 s at load 9, 18.4 s at load 25, 20.4 s with 4 more busy processes (a
 * fresh clone's `npm test` at 5 times the cores waited 20 s and failed). The wait polls for four
 * times the worst.
 */
const BOOT_MS = 90_000;

let dir: string;
let machine: QemuMachine | null = null;

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-machine-'));
}, 120_000);
afterAll(async () => {
  await machine?.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe('qemuArgs', () => {
  it('never has a network device, and binds the USB input to the display', () => {
    const args = qemuArgs({
      paths: runPaths('/run/x'),
      guest: guestImagePaths('/g'),
      cmdline: 'console=ttyS0',
      boot: 'kernel',
      memoryMb: 256,
      accel: 'tcg',
      spice: true,
    }).join(' ');
    expect(args).toContain('-nic none');
    expect(args).not.toMatch(/-netdev|virtio-net|e1000|rtl8139/);
    expect(args).toContain('-accel tcg');
    expect(args).toContain('-device VGA,id=video0');
    expect(args).toContain('usb-kbd,id=kbd,display=video0');
    expect(args).toContain('usb-tablet,id=tablet,display=video0');
    expect(args).toContain('-vnc unix:/run/x/vnc.sock');
    expect(args).toContain(
      '-chardev socket,id=serial0,path=/run/x/serial.sock,server=on,wait=off,logfile=/run/x/serial.log,logappend=off -serial chardev:serial0',
    );
    expect(args).toContain('-spice unix=on,addr=/run/x/spice.sock,disable-ticketing=on');
    expect(args).toContain('-kernel /g/vmlinux -initrd /g/initrd.img -append console=ttyS0');
    // no sound server given: no sound card (QEMU would not start without its server)
    expect(args).not.toMatch(/-audiodev|intel-hda/);
  });

  it('gives the VM an intel-hda sound card on our PulseAudio when there is one', () => {
    const args = qemuArgs({
      paths: runPaths('/run/x'),
      guest: guestImagePaths('/g'),
      cmdline: 'console=ttyS0',
      boot: 'kernel',
      memoryMb: 256,
      accel: 'tcg',
      spice: false,
      audio: {
        socket: '/run/a,b/pa.sock',
        speakerSink: 'kvm_speaker',
        micSource: 'kvm_mic.monitor',
      },
    });
    expect(args.join(' ')).toContain(
      '-audiodev pa,id=snd0,server=unix:/run/a,,b/pa.sock,out.name=kvm_speaker,' +
        'in.name=kvm_mic.monitor,out.frequency=48000,in.frequency=48000,' +
        'out.latency=80000,in.latency=10000,timer-period=5000 ' +
        '-device intel-hda,id=sound0 -device hda-duplex,audiodev=snd0,mixer=off,use-timer=off',
    );
  });
});

describe('QemuMachine', () => {
  it(
    'boots the guest, kills a stale QEMU, follows power, restarts after kill -9, cleans up',
    async () => {
      const runDir = join(dir, 'run');
      const paths = runPaths(runDir);
      // A QEMU a dead server left behind in this run folder, named by the pidfile.
      await mkdir(runDir, { recursive: true });
      const stale = spawn(
        'qemu-system-x86_64',
        ['-S', '-nodefaults', '-display', 'none', '-qmp', `unix:${paths.qmp},server=on,wait=off`],
        { detached: true, stdio: 'ignore' },
      );
      stale.unref();
      await writeFile(paths.pidfile, `${stale.pid}\n`);

      const m = new QemuMachine({ runDir, backoff: { initialMs: 100 } });
      machine = m;
      const powers: MachinePower[] = [];
      m.on('power', (p) => powers.push(p));
      await m.init();
      expect(await readProcArgv(stale.pid as number)).toBeNull();
      const pid = m.pid as number;
      expect(await readFile(paths.pidfile, 'utf8')).toBe(`${pid}\n`);
      expect(m.getPowerState()).toBe('running');

      // The guest's init reports on the serial port; its shell is on the screen (video tests).
      const serial = await until(
        'guest ready',
        async () => (await readSerial(paths.serial)).includes('guest ready'),
        BOOT_MS,
      );
      expect(serial).toBe(true);
      const log = await readSerial(paths.serial);
      expect(log).toMatch(/input event\d add QEMU QEMU USB Keyboard/);
      expect(log).toMatch(/input event\d add Power Button/);

      // Run state from QMP events.
      await m.command('stop');
      await until('paused', () => m.getPowerState() === 'paused');
      await m.command('cont');
      await until('running', () => m.getPowerState() === 'running');

      // ACPI power button: the guest powers off; -no-shutdown keeps QEMU, in run state shutdown.
      await m.command('system_powerdown');
      await until('guest powered off', () => m.getPowerState() === 'shutdown', 15_000);
      expect(await readSerial(paths.serial)).toContain('guest poweroff');
      await m.command('system_reset');
      await m.command('cont');
      await until('powered on', () => m.getPowerState() === 'running');

      // A crash: the supervisor restarts QEMU and QMP reconnects.
      const restarted = new Promise<number>((resolve) => m.once('started', resolve));
      process.kill(pid, 'SIGKILL');
      const newPid = await restarted;
      expect(newPid).not.toBe(pid);
      await m.waitReady(15_000);
      expect((await m.command('query-status')).status).toBe('running');
      await until('running again', () => m.getPowerState() === 'running');
      expect(powers).toContain('unavailable');

      await m.dispose();
      machine = null;
      expect(m.getPowerState()).toBe('unavailable');
      expect(await processesMentioning(paths.qmp)).toEqual([]);
      await expect(readFile(paths.pidfile)).rejects.toThrow();
    },
    2 * BOOT_MS,
  );
});
