/**
 * At the gadget's start: modprobe libcomposite and the function modules, then mount configfs,
 * when `usb_gadget` is missing; only as root and only when the programs are there (a board's
 * systemd normally did it). Never fatal: what fails is logged, and problems() says what is missing.
 */
import { join } from 'node:path';
import type { Logger } from '../../log';
import type { CommandRunner } from '../../process/run';
import { listDir, type GadgetFs } from './configfs';

export async function setupGadgetKernel(
  fs: GadgetFs,
  configfs: string,
  setup: { run: CommandRunner; root: boolean } | null | undefined,
  log: Logger,
): Promise<void> {
  if (!setup || !setup.root) return;
  if (await fs.exists(join(configfs, 'usb_gadget'))) return;
  const program = async (name: string): Promise<string | null> => {
    for (const dir of ['/usr/sbin', '/sbin', '/usr/bin', '/bin']) {
      if (await fs.exists(join(dir, name))) return join(dir, name);
    }
    return null;
  };
  const modprobe = await program('modprobe');
  if (modprobe) {
    for (const mod of ['libcomposite', 'usb_f_hid', 'usb_f_mass_storage']) {
      await setup.run(modprobe, [mod], { timeoutMs: 10_000 }).catch((err: Error) => {
        log.warn({ module: mod, err: err.message }, 'gadget: modprobe failed');
      });
    }
  }
  if (await fs.exists(join(configfs, 'usb_gadget'))) return;
  const mount = await program('mount');
  if (mount && (await listDir(fs, configfs)).length === 0) {
    await setup
      .run(mount, ['-t', 'configfs', 'none', configfs], { timeoutMs: 10_000 })
      .catch((err: Error) => {
        log.warn({ err: err.message }, 'gadget: mounting configfs failed');
      });
  }
}
