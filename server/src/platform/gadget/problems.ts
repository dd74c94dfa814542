/** The texts problems() shows when a part of the gadget could not be made or bound. */
import { join } from 'node:path';
import { errnoCode, listDir, type GadgetFs } from './configfs';
import { ABSOLUTE_MOUSE_FN, KEYBOARD_FN, MSD_FN, RELATIVE_MOUSE_FN, UAC2_FN } from './composite';
import { UVC_FN } from './uvc';

/** What one function needs of its module when it cannot be made. */
const FUNCTION_MODULE: Record<string, string> = {
  hid: 'usb_f_hid',
  mass_storage: 'usb_f_mass_storage',
  uac2: 'usb_f_uac2',
  uvc: 'usb_f_uvc',
};

const FUNCTION_WHAT: Record<string, string> = {
  [KEYBOARD_FN]: 'no keyboard',
  [ABSOLUTE_MOUSE_FN]: 'no absolute mouse',
  [RELATIVE_MOUSE_FN]: 'no relative mouse',
  [MSD_FN]: 'no virtual media',
  [UAC2_FN]: 'no sound',
  [UVC_FN]: 'no webcam',
};

/** Why there is no `<configfs>/usb_gadget`: configfs not mounted, or libcomposite missing. */
export async function gadgetlessProblem(fs: GadgetFs, configfs: string): Promise<string> {
  const root = join(configfs, 'usb_gadget');
  return (await listDir(fs, configfs).catch(() => [])).length === 0
    ? `configfs is not mounted at ${configfs}: no USB gadget can be made`
    : `Kernel module libcomposite is missing (${root} does not exist): no USB gadget can be made`;
}

/**
 * Functions that could not be made, told apart: a missing module (gathered into one problem per
 * module, problems()) or another failure (one problem each).
 */
export class FunctionFailures {
  private readonly missing = new Map<string, string[]>();
  private readonly other: string[] = [];

  constructor(
    private readonly fs: GadgetFs,
    private readonly sys: string,
  ) {}

  async add(fn: string, err: unknown): Promise<void> {
    const type = fn.split('.')[0]!;
    const module = FUNCTION_MODULE[type]!;
    const code = errnoCode(err);
    const moduleGone = !(await this.fs.exists(join(this.sys, 'module', module)));
    if (moduleGone && (code === 'ENOENT' || code === 'ENODEV' || code === 'EINVAL')) {
      this.missing.set(module, [...(this.missing.get(module) ?? []), FUNCTION_WHAT[fn]!]);
    } else {
      this.other.push(
        `The function ${fn} could not be made (${FUNCTION_WHAT[fn]}): ${(err as Error).message}`,
      );
    }
  }

  /** In the order problems() listed them: other failures as they came, then missing modules. */
  problems(): string[] {
    return [
      ...this.other,
      ...[...this.missing].map(
        ([module, what]) => `Kernel module ${module} is missing: ${what.join(', ')}`,
      ),
    ];
  }
}

export const BIND_PROBLEM = 'The gadget could not be bound';

export function bindProblem(udc: string, err: unknown): string {
  const hint = errnoCode(err) === 'EBUSY' ? ' (another gadget holds it)' : '';
  return `${BIND_PROBLEM} to ${udc}${hint}: ${(err as Error).message}`;
}

/**
 * A function the gadget binds without (the sound card): the UDC refused the gadget with it, and
 * took it without (a UDC with no isochronous endpoints, as dummy_hcd's own).
 */
export function optionalDroppedProblem(fn: string, udc: string, err: unknown): string {
  return (
    `The function ${fn} was left out (${FUNCTION_WHAT[fn] ?? fn}): ${udc} did not bind the ` +
    `gadget with it (${(err as Error).message}); it bound without it`
  );
}
