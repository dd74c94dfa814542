/**
 * The board's USB device controller (`<sys>/class/udc`) and the `/dev` nodes a bound gadget's
 * HID functions get, with the texts problems() shows when they are not there.
 */
import { join } from 'node:path';
import type { Logger } from '../../log';
import { listDir, readAttr, type GadgetFs } from './configfs';

export interface FoundUdc {
  /** The UDC to bind, null when none is there. */
  name: string | null;
  /** The UDC whose state is shown: the one found, else the configured one, else null. */
  shown: string | null;
  /** What is missing, null when a UDC was found. */
  problem: string | null;
}

/** The UDC to use: the configured one (`wanted`), else the first there. */
export async function findUdc(fs: GadgetFs, sys: string, wanted: string): Promise<FoundUdc> {
  const classDir = join(sys, 'class', 'udc');
  const names = (await listDir(fs, classDir).catch(() => [])).map((e) => e.name).sort();
  let name: string | null;
  let problem: string | null;
  if (wanted) {
    name = names.includes(wanted) ? wanted : null;
    problem = name
      ? null
      : `USB device controller (UDC) ${wanted} is not in ${classDir}` +
        (names.length ? ` (there: ${names.join(', ')})` : '');
  } else {
    name = names[0] ?? null;
    problem = name
      ? null
      : `No USB device controller (UDC) in ${classDir}: this board's USB port cannot act as a device`;
  }
  return { name, shown: name ?? (wanted || null), problem };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * A bound HID function's node: `functions/hid.X/dev` ("maj:min") →
 * `<sys>/dev/char/<maj:min>/uevent` DEVNAME → `<dev>/…`, waiting up to `waitMs` for it to appear.
 */
export async function resolveHidNode(
  fs: GadgetFs,
  paths: { gadgetDir: string; sys: string; dev: string },
  fn: string,
  waitMs: number,
  log: Logger,
): Promise<string | null> {
  const devno = await readAttr(fs, join(paths.gadgetDir, 'functions', fn, 'dev'));
  if (!devno || !/^\d+:\d+$/.test(devno)) {
    log.warn({ fn, dev: devno }, 'gadget: no device number');
    return null;
  }
  const deadline = performance.now() + waitMs;
  for (;;) {
    const uevent = await readAttr(fs, join(paths.sys, 'dev', 'char', devno, 'uevent'));
    const name = uevent ? /^DEVNAME=(.+)$/m.exec(uevent)?.[1] : undefined;
    if (name && !name.includes('..')) {
      const path = join(paths.dev, name);
      if (await fs.exists(path)) return path;
    }
    if (performance.now() >= deadline) {
      log.warn({ fn, devno, name }, 'gadget: the /dev node did not appear');
      return name ? join(paths.dev, name) : null;
    }
    await sleep(20);
  }
}
