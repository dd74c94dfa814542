/**
 * The environment the device server starts with, given by whatever starts it: the launcher
 * (`npm start`, systemd), and the e2e fixture and the benches, so that they measure the server
 * as it runs. These are glibc's malloc settings, which it reads once when the process starts
 * (node has no call to change them later).
 *
 * MALLOC_MMAP_THRESHOLD_: an allocation of 128 KiB or more gets a mapping of its own, given back
 * to the system when it is freed. That is glibc's default too, but by default the threshold
 * rises to the size of every such chunk freed (up to 32 MiB): after the start's first large
 * free, every allocation below that size comes from the heap, which keeps what they fragment.
 * Set, the threshold stays where it is. Idle testbed server (docs/operations.md "Memory"):
 * 3-4 MB less resident with a console's event socket open.
 */
export const SERVER_MALLOC_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: String(128 * 1024),
});

/** `base` with the malloc settings added; a setting `base` already has is kept. */
export function serverEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...SERVER_MALLOC_ENV, ...base };
}
