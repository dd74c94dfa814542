/**
 * Entry of the direct H.264 worker (its own chunk: Vite bundles `new Worker(new URL(...))`).
 * The media socket, the decoder and the OffscreenCanvas live here, off the page's main thread.
 */
import { hostDirectPipelines, type WorkerScopeLike } from './h264-direct-worker-host';

hostDirectPipelines(self as unknown as WorkerScopeLike);
