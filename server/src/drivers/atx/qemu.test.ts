import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QemuAtx } from './qemu';
import { QemuFingerbot } from '../fingerbot/qemu';
import { QemuMachine } from '../../platform/qemu/machine';
import { ensureGuestImage, readSerial, until } from '../../platform/qemu/test-support';

let dir: string;
let machine: QemuMachine;
let atx: QemuAtx;

async function count(text: string): Promise<number> {
  return (await readSerial(machine.paths.serial)).split(text).length - 1;
}

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-atx-'));
  machine = new QemuMachine({ runDir: join(dir, 'run') });
  atx = new QemuAtx(machine);
  await atx.init();
  await machine.init();
  await until('guest ready', async () => (await count('guest ready')) === 1, 60_000);
}, 90_000);

afterAll(async () => {
  await atx.dispose();
  await machine.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe('QemuAtx', () => {
  it('a short press is the ACPI button; the next one powers the VM on again', async () => {
    const leds: boolean[] = [];
    const off = atx.onState((s) => leds.push(s.leds.power));
    expect(atx.getState()).toEqual({ enabled: true, leds: { power: true, hdd: false } });
    const t0 = performance.now();
    await atx.click('power');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(490);
    await until('powered off', () => machine.power !== 'running', 20_000);
    expect(await count('guest poweroff')).toBe(1);
    expect(atx.getState().leds.power).toBe(false);
    await atx.click('power');
    expect(machine.power).toBe('running');
    await until('booted again', async () => (await count('guest ready')) === 2, 60_000);
    off();
    expect(leds).toContain(false);
    expect(leds.at(-1)).toBe(true);
  }, 90_000);

  it('reset restarts a running VM', async () => {
    await atx.click('reset');
    await until('rebooted', async () => (await count('guest ready')) === 3, 60_000);
    expect(machine.power).toBe('running');
  }, 90_000);

  it('a long press cuts the power after 4 s; the fingerbot presses the same button', async () => {
    // the guest may power off at once on the ACPI press; either way the VM ends up off
    const t0 = performance.now();
    await atx.click('power_long');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(6400);
    expect(machine.power).not.toBe('running');
    const finger = new QemuFingerbot(machine, dir);
    expect(await finger.version()).toBe('1.0.0');
    await finger.press(1000);
    expect(machine.power).toBe('running');
    await until('booted by the finger', async () => (await count('guest ready')) === 4, 60_000);
  }, 90_000);
});
