import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findSetpriv, readProcArgv } from '../../process/supervisor';
import {
  GpiodTools,
  GpioToolError,
  childArgv,
  classifyGpioError,
  parseEdge,
  parseGpioinfo,
  spawnTool,
  type GpioEdge,
} from './tools';

/** libgpiod 1.6's gpioinfo of the device VM's gpio-sim chip, the server holding its lines. */
const INFO = `gpiochip1 - 4 lines:
\tline   0: "atx-power-button" "gpioset" output active-high [used]
\tline   1: "atx-reset-button" unused input active-high 
\tline   2: "atx-power-led" "gpiomon" input active-high [used]
\tline   3:      unnamed       unused   input  active-high 
`;

describe('gpio tools: parsing', () => {
  it("reads gpioinfo's lines: names, holders, direction, polarity", () => {
    expect(parseGpioinfo(INFO)).toEqual({
      name: 'gpiochip1',
      lines: [
        {
          offset: 0,
          name: 'atx-power-button',
          consumer: 'gpioset',
          used: true,
          direction: 'output',
          activeLow: false,
        },
        {
          offset: 1,
          name: 'atx-reset-button',
          consumer: null,
          used: false,
          direction: 'input',
          activeLow: false,
        },
        {
          offset: 2,
          name: 'atx-power-led',
          consumer: 'gpiomon',
          used: true,
          direction: 'input',
          activeLow: false,
        },
        {
          offset: 3,
          name: null,
          consumer: null,
          used: false,
          direction: 'input',
          activeLow: false,
        },
      ],
    });
    expect(() => parseGpioinfo('garbage')).toThrow(GpioToolError);
  });

  it("reads gpiomon's edges and says what a tool's error means", () => {
    expect(parseEdge('2 1 1234 500000000')).toEqual({
      offset: 2,
      value: 1,
      ns: 1_234_500_000_000n,
    });
    expect(parseEdge('3 0 1 2')).toMatchObject({ offset: 3, value: 0 });
    expect(parseEdge('nonsense')).toBeNull();
    expect(
      classifyGpioError('gpioset: error setting the GPIO line values: Device or resource busy'),
    ).toBe('busy');
    expect(
      classifyGpioError("gpioset: error opening gpiochip 'kvm-atx': No such file or directory"),
    ).toBe('missing');
    expect(classifyGpioError('gpioset: invalid offset')).toBe('other');
  });
});

describe('gpio tools: processes', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-gpio-tools-'));
    const tool = async (name: string, body: string) => {
      await writeFile(join(dir, name), `#!/bin/sh\n${body}\n`);
      await chmod(join(dir, name), 0o755);
    };
    await tool('gpioinfo', `printf '${INFO.replace(/\t/g, '\\t')}'`);
    await tool('gpioget', 'echo "$@" > "$(dirname "$0")/get.args"; echo "0 1"');
    // a line another process holds
    await tool(
      'gpioset',
      'echo "gpioset: error setting the GPIO line values: Device or resource busy" >&2; exit 1',
    );
    await tool(
      'gpiomon',
      'echo "$@" > "$(dirname "$0")/mon.args"; echo "2 1 10 5"; echo "3 0 11 6"; exec sleep 60',
    );
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('GpiodTools: info, get, a busy line, and edges from gpiomon', async () => {
    const tools = new GpiodTools(dir);
    expect((await tools.info('kvm-atx')).lines.map((l) => l.name)).toEqual([
      'atx-power-button',
      'atx-reset-button',
      'atx-power-led',
      null,
    ]);
    expect(await tools.get('kvm-atx', [2, 3])).toEqual([0, 1]);
    const busy = await tools.hold('kvm-atx', 0, 0).exited;
    expect(busy).toMatchObject({ code: 1, stopped: false });
    expect(classifyGpioError(busy.stderr)).toBe('busy');
    const edges: GpioEdge[] = [];
    const mon = tools.monitor('kvm-atx', [2, 3], (e) => edges.push(e));
    const deadline = performance.now() + 10_000;
    while (edges.length < 2 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(edges.map((e) => [e.offset, e.value])).toEqual([
      [2, 1],
      [3, 0],
    ]);
    const exit = await mon.stop();
    expect(exit.stopped).toBe(true);
    expect(exit.signal ?? exit.code).toBeTruthy();
  });

  it('a tool child dies with the server: through setpriv --pdeathsig KILL, gone when its parent is killed -9', async () => {
    const setpriv = findSetpriv();
    expect(setpriv, 'util-linux setpriv (the server uses it for every child)').not.toBeNull();
    const [cmd, argv] = childArgv('/bin/sleep', ['60'], setpriv);
    expect(argv.slice(0, 3)).toEqual(['--pdeathsig', 'KILL', '--']);
    // A stand-in for the server: spawns the tool as spawnTool does, prints its pid, then waits.
    const parent = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('node:child_process').spawn(${JSON.stringify(cmd)}, ${JSON.stringify(argv)}, { detached: true, stdio: 'ignore' });
         c.on('spawn', () => console.log(c.pid)); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const pid = await new Promise<number>((resolve) =>
      parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
    );
    // setpriv has exec'd the tool by the time its argv says sleep
    const deadline = performance.now() + 10_000;
    while ((await readProcArgv(pid))?.[0] !== '/bin/sleep' && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await readProcArgv(pid))?.[0]).toBe('/bin/sleep');
    parent.kill('SIGKILL');
    while ((await readProcArgv(pid)) !== null && performance.now() < deadline + 10_000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await readProcArgv(pid)).toBeNull();
  });

  it("watchGone: the chip's device node removed is said at once (inotify, no polling)", async () => {
    const dev = await mkdtemp(join(tmpdir(), 'kvm-gpio-dev-'));
    try {
      await writeFile(join(dev, 'gpiochip9'), '');
      await writeFile(join(dev, 'gpiochip10'), '');
      let gone = 0;
      const unwatch = new GpiodTools(dir, undefined, dev).watchGone('gpiochip9', () => gone++);
      await rm(join(dev, 'gpiochip10'));
      await new Promise((r) => setTimeout(r, 100));
      expect(gone).toBe(0);
      await rm(join(dev, 'gpiochip9'));
      const deadline = performance.now() + 5000;
      while (gone === 0 && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(gone).toBe(1);
      unwatch();
      // a node already missing when the watch starts is said too
      let missing = 0;
      new GpiodTools(dir, undefined, dev).watchGone('gpiochip9', () => missing++)();
      expect(missing).toBe(1);
    } finally {
      await rm(dev, { recursive: true, force: true });
    }
  });

  it('stop() ends a held line with SIGTERM and says it was asked for', async () => {
    const child = spawnTool('/bin/sleep', ['60']);
    expect(child.pid).toBeGreaterThan(0);
    const exit = await child.stop();
    expect(exit).toMatchObject({ stopped: true, signal: 'SIGTERM' });
    expect(await child.stop()).toBe(exit);
  });
});
