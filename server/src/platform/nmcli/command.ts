/**
 * How the nmcli and timedatectl drivers run their commands and read a failure: the server's one
 * runner (process/run.ts: execFile, so an SSID or a key is one argv entry whatever it holds) in
 * the C locale, because nmcli translates its messages and the Wi-Fi failure mapping reads them.
 * Tests inject a fake runner that serves fixtures and records every argv (test-support.ts).
 */
import { runCommand, type CommandError, type CommandRunner } from '../../process/run';

/** `runCommand` in the C locale (10 s unless told). */
export const cLocaleRunner: CommandRunner = (file, args, opts) =>
  runCommand(file, args, {
    ...opts,
    env: { ...process.env, LC_ALL: 'C', LANG: 'C', LANGUAGE: '' },
  });

/** The last lines of what a failed command said, without nmcli's "Hint: use journalctl" line. */
export function said(err: CommandError): string {
  return (err.stderr.trim() || err.stdout.trim())
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('Hint:'))
    .slice(-3)
    .join(' ');
}

/** What the command said, else how it failed: `nmcli connection failed (timed out)`. */
export function failureText(err: CommandError): string {
  const words = said(err);
  if (words) return words;
  const how = err.timedOut
    ? 'timed out'
    : err.code === 'ENOENT'
      ? 'not installed'
      : `exit ${String(err.code)}`;
  return `${err.file} ${err.args[0] ?? ''} failed (${how})`;
}
