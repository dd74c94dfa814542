import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { until } from '../../platform/gadget/test-support';
import { CameraService, type CameraGadget } from './camera-service';

/**
 * A stand-in for uvc-stream (the real one needs a UVC gadget's node): node reading a script of
 * status lines from the file named in its --device argument, one line per 50 ms, then either
 * exiting (`exit <code>`) or reading its stdin (`read`) or not (`hold`), counting bytes into
 * `<device>.bytes` as it reads.
 */
const FAKE = `#!/usr/bin/env node
const fs = require('node:fs');
const device = process.argv[process.argv.indexOf('--device') + 1];
const script = fs.readFileSync(device, 'utf8').trim().split('\\n');
let bytes = 0;
let i = 0;
const next = () => {
  const line = script[i++];
  if (line === undefined) return;
  if (line.startsWith('exit ')) process.exit(Number(line.slice(5)));
  if (line === 'read') {
    process.stdin.on('data', (c) => { bytes += c.length; fs.writeFileSync(device + '.bytes', String(bytes)); });
  } else if (line !== 'hold') {
    process.stdout.write(line + '\\n');
  }
  setTimeout(next, 50);
};
next();
setInterval(() => {}, 1000);
`;

let dir: string | null = null;
let service: CameraService | null = null;

afterEach(async () => {
  await service?.dispose();
  service = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

class FakeGadget implements CameraGadget {
  online = true;
  problem: string | null = null;
  private readonly listeners = new Set<() => void>();
  constructor(private readonly node: string) {}
  cameraOnline(): boolean {
    return this.online;
  }
  cameraProblem(): string | null {
    return this.problem;
  }
  async cameraNode() {
    return this.online ? { node: this.node, streamingInterface: 1 } : null;
  }
  onChange(l: () => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  onRebuilt(l: () => void): () => void {
    return this.onChange(l);
  }
  change(): void {
    for (const l of this.listeners) l();
  }
  dropped: string[] = [];
  async dropCamera(reason: string): Promise<void> {
    this.dropped.push(reason);
  }
}

async function start(
  script: string[],
  size = { width: 64, height: 48 },
): Promise<{ s: CameraService; g: FakeGadget; node: string }> {
  dir = await mkdtemp(join(tmpdir(), 'camera-'));
  const program = join(dir, 'fake-uvc-stream');
  await writeFile(program, FAKE);
  await chmod(program, 0o755);
  const node = join(dir, 'video9');
  await writeFile(node, script.join('\n'));
  const g = new FakeGadget(node);
  service = new CameraService({
    gadget: g,
    program,
    spec: { ...size, fps: [30] },
    log: SILENT_LOGGER,
    backoff: { initialMs: 100, maxMs: 400 },
  });
  service.init();
  return { s: service, g, node };
}

describe('CameraService: the webcam frame server and what the remote computer does', () => {
  it('says streaming, then stalled when the host stops taking frames, then streaming again', async () => {
    const { s } = await start(['ready', 'streamon', 'hold', 'stalled', 'hold', 'reading', 'hold']);
    const seen: string[] = [];
    s.on('state', () => {
      const r = s.state().remote;
      if (r && seen.at(-1) !== r) seen.push(r);
    });
    await until(
      () => seen.includes('streaming') && seen.at(-1) === 'streaming' && seen.length >= 3,
      5000,
    );
    expect(seen).toEqual(['idle', 'streaming', 'stalled', 'streaming']);
    expect(s.state()).toMatchObject({ available: true, code: null, remote: 'streaming' });
  });

  it('a crash is restarted with a back-off and the state says restarting meanwhile', async () => {
    const { s } = await start(['ready', 'exit 3']);
    const seen: string[] = [];
    s.on('state', () => seen.push(s.state().remote ?? 'null'));
    await until(() => s.stats.restarts >= 2, 5000);
    expect(seen).toContain('restarting');
    // back to idle after each restart's `ready`
    expect(seen.filter((x) => x === 'idle').length).toBeGreaterThanOrEqual(1);
  });

  it('a host that never reads: frames are dropped, never queued beyond one', async () => {
    // 640x480 YUYV: 600 KiB a frame, more than the socket to the child takes
    const { s } = await start(['ready', 'hold'], { width: 640, height: 480 });
    await until(() => s.serverState() === 'running' && s.state().remote === 'idle', 5000);
    const frame = Buffer.alloc(s.frameSize, 0x80);
    for (let i = 0; i < 200; i += 1) s.pushFrame(frame);
    // the socket takes part of one, the rest of it waits here; every later frame is dropped
    expect(s.stats.written).toBeLessThanOrEqual(2);
    expect(s.stats.dropped).toBeGreaterThanOrEqual(198);
    expect(s.pushFrame(Buffer.alloc(10))).toBe(false);
  });

  it('frames reach a server that reads, each with its length first', async () => {
    const { s, node } = await start(['ready', 'read', 'hold']);
    await until(() => s.serverState() === 'running', 5000);
    await new Promise((r) => setTimeout(r, 200));
    const frame = Buffer.alloc(s.frameSize, 0x10);
    let sent = 0;
    for (let i = 0; i < 20; i += 1) {
      if (s.pushFrame(frame)) sent += 1;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(sent).toBeGreaterThan(10);
    await until(
      async () =>
        Number(await readFile(`${node}.bytes`, 'utf8').catch(() => '0')) ===
        sent * (s.frameSize + 4),
      5000,
    );
  });

  it('no webcam function (left out at bind): unavailable with the gadget’s reason, no server', async () => {
    const { s, g } = await start(['ready', 'hold']);
    await until(() => s.serverState() === 'running', 5000);
    g.online = false;
    g.problem = 'The function uvc.usb0 was left out (no webcam): dummy_udc.0 did not bind';
    g.change();
    await until(() => s.serverState() === 'stopped', 5000);
    expect(s.state()).toEqual({
      available: false,
      reason: g.problem,
      code: 'uvc_unavailable',
      active: false,
      remote: null,
    });
    expect(s.pushFrame(Buffer.alloc(s.frameSize))).toBe(false);
  });

  it('a frame server that cannot start, or keeps ending: the gadget is made without the webcam', async () => {
    // keeps ending: five quick exits
    const { s, g } = await start(['ready', 'exit 1']);
    await until(() => g.dropped.length === 1, 15_000);
    expect(g.dropped[0]).toMatch(/^its frame server keeps ending \(5 times in a minute; /);
    expect(s.stats.restarts).toBe(5);
    await until(() => s.serverState() === 'stopped', 5000);
    await service?.dispose();
    service = null;
    // cannot start: the program is not there (a board built without a C compiler)
    const g2 = new FakeGadget(join(dir!, 'video9'));
    service = new CameraService({
      gadget: g2,
      program: join(dir!, 'no-such-program'),
      spec: { width: 64, height: 48, fps: [30] },
      log: SILENT_LOGGER,
      backoff: { initialMs: 100, maxMs: 400 },
    });
    service.init();
    await until(() => g2.dropped.length >= 1, 5000);
    expect(g2.dropped[0]).toMatch(/no-such-program cannot start/);
  });

  it('active while a browser sends its camera', async () => {
    const { s } = await start(['ready', 'hold']);
    s.setActive('a', true);
    expect(s.state().active).toBe(true);
    s.setActive('a', false);
    expect(s.state().active).toBe(false);
  });
});
