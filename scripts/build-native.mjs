// Builds our native helper programs into server/dist (they ship with the server bundle):
// uvc-stream, the UVC webcam's frame server (server/native/uvc-stream/uvc-stream.c, issue 24).
// Static, so a board or the device VM needs no C library of the same version; rebuilt only when
// the source is newer than the program. Without a C compiler it says so and builds nothing: the
// server then reports the webcam's frame server as not starting (docs/hardware.md "Camera").
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

export const UVC_STREAM_SOURCE = join(root, 'server', 'native', 'uvc-stream', 'uvc-stream.c');
export const UVC_STREAM = join(root, 'server', 'dist', 'uvc-stream');

/** Compiles uvc-stream if needed; returns its path, or null when it cannot be built here. */
export function buildNative({ quiet = false, cc = process.env.CC || 'gcc' } = {}) {
  const src = statSync(UVC_STREAM_SOURCE);
  if (existsSync(UVC_STREAM) && statSync(UVC_STREAM).mtimeMs >= src.mtimeMs) return UVC_STREAM;
  mkdirSync(join(root, 'server', 'dist'), { recursive: true });
  const tmp = `${UVC_STREAM}.new`;
  const args = ['-O2', '-Wall', '-Wextra', '-Werror', '-static', '-o', tmp, UVC_STREAM_SOURCE];
  const r = spawnSync(cc, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    console.warn(
      `build-native: ${cc} ${args.join(' ')} failed: ${r.error?.message ?? r.stderr.trim()}`,
    );
    return null;
  }
  renameSync(tmp, UVC_STREAM);
  if (!quiet) console.log(`build-native: ${UVC_STREAM}`);
  return UVC_STREAM;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exit(buildNative() ? 0 : 1);
}
