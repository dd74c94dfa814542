/**
 * The messages between `H264DirectStream` (page) and the direct H.264 worker, and the worker's
 * side: one `DirectPipeline` per session (a stream between start() and stop()), and the
 * OffscreenCanvases the page handed over. A canvas is transferred once per <canvas> element and
 * then named by id, because a canvas whose control went to this worker can never be transferred
 * again, and the console keeps its <canvas> when it replaces one stream by the next.
 */
import {
  DirectPipeline,
  globalAnimationFrame,
  type PipelineEvent,
  type PipelineOptions,
} from './h264-direct-pipeline';
import type { CanvasLike } from './h264-direct-presenter';

/** Page → worker. `sid` names a session. */
export type ToWorker =
  | { op: 'connect'; sid: number; conn: number; url: string }
  | { op: 'disconnect'; sid: number }
  /**
   * `canvas` comes with the first use of `canvasId` (transferred); null detaches. `seq` names
   * the attachment in the session's `painted` events.
   */
  | { op: 'canvas'; sid: number; canvasId: number | null; seq?: number; canvas?: CanvasLike }
  /** the <canvas> left the page: forget its OffscreenCanvas */
  | { op: 'release'; canvasId: number }
  | { op: 'key'; sid: number }
  /** report the counters now, changed or not */
  | { op: 'counters'; sid: number; ask: number }
  /** the session ends: disconnect, report the last counters, then `closed` */
  | { op: 'close'; sid: number };

/** Worker → page. */
export type FromWorker = { sid: number; event: PipelineEvent } | { sid: number; closed: true };

/** The parts of a DedicatedWorkerGlobalScope (or a test's fake) used here. */
export interface WorkerScopeLike {
  postMessage(message: FromWorker): void;
  addEventListener(type: 'message', listener: (event: { data: ToWorker }) => void): void;
}

export function hostDirectPipelines(
  scope: WorkerScopeLike,
  options: Omit<PipelineOptions, 'emit'> = globalAnimationFrame(),
): void {
  const sessions = new Map<number, DirectPipeline>();
  const canvases = new Map<number, CanvasLike>();
  const session = (sid: number): DirectPipeline => {
    let pipeline = sessions.get(sid);
    if (!pipeline) {
      pipeline = new DirectPipeline({
        ...options,
        emit: (event) => scope.postMessage({ sid, event }),
      });
      sessions.set(sid, pipeline);
    }
    return pipeline;
  };
  scope.addEventListener('message', ({ data }) => {
    switch (data.op) {
      case 'connect':
        session(data.sid).connect(data.conn, data.url);
        break;
      case 'disconnect':
        sessions.get(data.sid)?.disconnect();
        break;
      case 'canvas': {
        if (data.canvas && data.canvasId !== null) canvases.set(data.canvasId, data.canvas);
        const canvas = data.canvasId === null ? null : (canvases.get(data.canvasId) ?? null);
        session(data.sid).attachCanvas(canvas, data.seq);
        break;
      }
      case 'release': {
        const canvas = canvases.get(data.canvasId);
        canvases.delete(data.canvasId);
        if (canvas) for (const pipeline of sessions.values()) pipeline.forgetCanvas(canvas);
        break;
      }
      case 'key':
        sessions.get(data.sid)?.requestKeyFrame();
        break;
      case 'counters':
        session(data.sid).flushCounters(data.ask);
        break;
      case 'close': {
        const pipeline = sessions.get(data.sid);
        sessions.delete(data.sid);
        if (pipeline) {
          pipeline.disconnect();
          pipeline.attachCanvas(null);
          pipeline.flushCounters(0);
        }
        scope.postMessage({ sid: data.sid, closed: true });
        break;
      }
    }
  });
}
