import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A readout whose text changes every second or so (bitrate, fps, latency) keeps the widest width
 * it has had. The status bar wraps its items (a narrow window, or 1366 px with every control
 * shown): a text a few pixels wider moved the next item to the other line and back, so the bar's
 * height, and the remote screen's area above it, changed every few seconds, and the view
 * rendered again each time.
 */
export function GrowOnly({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    const element = ref.current;
    if (!element || typeof ResizeObserver !== 'function') return;
    let widest = 0;
    const observer = new ResizeObserver(() => {
      const width = Math.ceil(element.getBoundingClientRect().width);
      if (width <= widest) return;
      widest = width;
      element.style.minWidth = `${width}px`;
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return (
    <span
      ref={ref}
      style={{ display: 'inline-block', whiteSpace: 'nowrap', fontVariantNumeric: 'tabular-nums' }}
    >
      {children}
    </span>
  );
}
