/**
 * Stage times of the video pipeline for benches (bench/video-qemu.ts): with the environment
 * variable KVM_VIDEO_TRACE=1 the server writes one line on stderr per frame and stage,
 *   `video-stage <stage> <capturedAt> <capturedAt epoch> <at epoch>`
 * the frame's capture time as the pipeline keeps it (performance.now() ms, its id across stages;
 * the RTP timestamp is made from it), the same as epoch ms, and the epoch ms it passed the stage
 * at. Off (one boolean test) otherwise.
 */
const ON = process.env['KVM_VIDEO_TRACE'] === '1';

export type VideoStage =
  /** the source had the whole screen update that carries it (QEMU: the RFB update applied) */
  | 'received'
  /** the source handed the frame to the hub */
  | 'frame'
  /** the frame was written to the encoder */
  | 'encoder-in'
  /** its last bytes went into the encoder's stdin pipe */
  | 'piped'
  /** its access unit came out of the encoder */
  | 'unit';

export function traceStage(stage: VideoStage, capturedAt: number): void {
  if (!ON) return;
  const origin = performance.timeOrigin;
  process.stderr.write(
    `video-stage ${stage} ${capturedAt} ${(origin + capturedAt).toFixed(2)} ` +
      `${(origin + performance.now()).toFixed(2)}\n`,
  );
}
