/**
 * The WebCodecs side of direct H.264: the parts of VideoDecoder and VideoFrame the pipeline uses
 * (tests pass fakes) and the real decoder behind them. No DOM types: the worker loads it too.
 */

/** The parts of VideoFrame used here. */
export interface VideoFrameLike {
  readonly displayWidth: number;
  readonly displayHeight: number;
  /** microseconds: the chunk's (WebCodecs carries it through) */
  readonly timestamp?: number;
  close(): void;
}

export interface EncodedChunkInit {
  type: 'key' | 'delta';
  /** microseconds */
  timestamp: number;
  data: Uint8Array;
}

/** The parts of VideoDecoder used here (tests pass a fake). */
export interface VideoDecoderLike {
  readonly state: CodecState;
  readonly decodeQueueSize: number;
  configure(config: { codec: string; optimizeForLatency: boolean }): void;
  decode(chunk: EncodedChunkInit): void;
  reset(): void;
  close(): void;
}

export type DecoderFactory = (
  output: (frame: VideoFrameLike) => void,
  error: (error: unknown) => void,
) => VideoDecoderLike;

/** WebCodecs needs a secure context (HTTPS or localhost). */
export function webCodecsSupported(): boolean {
  return typeof VideoDecoder === 'function' && typeof EncodedVideoChunk === 'function';
}

export const createWebCodecsDecoder: DecoderFactory = (output, error) => {
  const decoder = new VideoDecoder({ output, error: (e) => error(e) });
  return {
    get state() {
      return decoder.state;
    },
    get decodeQueueSize() {
      return decoder.decodeQueueSize;
    },
    configure: (config) => decoder.configure(config),
    decode: (chunk) => decoder.decode(new EncodedVideoChunk(chunk)),
    reset: () => decoder.reset(),
    close: () => decoder.close(),
  };
};
