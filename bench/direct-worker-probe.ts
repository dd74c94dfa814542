/**
 * For the benches' page init scripts. The console decodes and draws direct H.264 in a Worker
 * (web/src/lib/h264-direct.ts, with an OffscreenCanvas), where a page's init script cannot
 * reach: its VideoDecoder and OffscreenCanvasRenderingContext2D are the worker's own.
 *
 * `directWorkerPrelude` runs in the page (pass it to `page.addInitScript` with the prelude's
 * source as its argument): when the console starts its direct H.264 worker, the worker first
 * runs `prelude` (a module's source, as text), then the console's own worker module, so the
 * prelude can wrap what the worker will use before the worker uses it. The prelude talks back
 * over a BroadcastChannel (the worker's postMessage belongs to the console). Clocks: the
 * worker's `performance.timeOrigin` differs from the page's; compare epoch times
 * (`performance.timeOrigin + performance.now()`).
 */
export function directWorkerPrelude(prelude: string): void {
  const NativeWorker = window.Worker;
  const module = (source: string): string =>
    URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  window.Worker = class extends NativeWorker {
    constructor(url: string | URL, options?: WorkerOptions) {
      const href = new URL(String(url), location.href).href;
      if (!href.includes('h264-direct-worker')) {
        super(url, options);
        return;
      }
      // Imports are evaluated in order, both before the worker takes its first message.
      const entry = `import ${JSON.stringify(module(prelude))};\nimport ${JSON.stringify(href)};\n`;
      super(module(entry), { ...options, type: 'module' });
    }
  };
}
