/** WebRTC's waits in the console's video controller (no imports: the bench reads them too). */
/**
 * How long WebRTC has for its first frame before direct H.264 is shown instead. Measured by
 * `npm run bench -- webrtc-connect` (docs/webrtc.md "Fallback"): a healthy connection took up
 * to 3.9 s on an idle machine and up to 10.3 s with one busy loop per core; 15 s is that max
 * with half again as margin. Slower than that (the CPU loaded five times over: 12-23 s) the
 * picture comes over direct H.264 first and WebRTC takes over when its attempt gets through.
 */
export const WEBRTC_FALLBACK_MS = 15_000;
/**
 * A WebRTC attempt after the fallback has this long (from its start) to decode a frame: twice
 * the slowest healthy connection measured with the CPU loaded five times over (23 s).
 */
export const WEBRTC_PROBE_MS = 45_000;
