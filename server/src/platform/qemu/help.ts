/**
 * What a QEMU binary says it has (`qemu -spice help`, `qemu -audiodev help`): Debian builds
 * SPICE and the PulseAudio backend as modules of other packages, so a VM's command line depends
 * on the answer. Asked once per binary and topic.
 */
import { runCommand } from '../../process/run';

const answers = new Map<string, Promise<string | null>>();

/** `qemuBinary <option> help`'s output, or null when it fails (the option is not built in). */
export function qemuHelp(qemuBinary: string, option: string): Promise<string | null> {
  const key = `${qemuBinary}\0${option}`;
  let known = answers.get(key);
  if (!known) {
    known = runCommand(qemuBinary, [option, 'help'], { timeoutMs: 10_000 }).then(
      ({ stdout }) => stdout,
      () => null,
    );
    answers.set(key, known);
  }
  return known;
}
