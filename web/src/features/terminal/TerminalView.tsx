import { useCallback, useEffect, useRef, useState } from 'react';
import { Alert, Button, Space, Spin } from 'antd';
import { useTranslation } from 'react-i18next';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import {
  TerminalConnection,
  type TerminalSocketFactory,
  type TerminalStatus,
} from './terminal-connection';
import { inputFrame, resizeFrame, type TerminalTarget } from './ttyd-codec';

/** Window and pane resizes settle before the terminal is refitted (one resize per burst). */
const FIT_DEBOUNCE_MS = 150;

/** One xterm.js terminal over one ttyd socket; a new socket (and shell) on reconnect. */
export function TerminalView({
  target,
  createSocket,
}: {
  target: TerminalTarget;
  /** Tests play the server. */
  createSocket?: TerminalSocketFactory;
}) {
  const { t } = useTranslation();
  const box = useRef<HTMLDivElement>(null);
  const term = useRef<Terminal | null>(null);
  const fit = useRef<FitAddon | null>(null);
  const socket = useRef<TerminalConnection | null>(null);
  const [status, setStatus] = useState<TerminalStatus>('connecting');
  const [startTimeoutS, setStartTimeoutS] = useState<number | null>(null);
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xterm = new Terminal({
      cursorBlink: true,
      scrollback: 5000,
      fontFamily: 'ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace',
      fontSize: 14,
    });
    const fitter = new FitAddon();
    xterm.loadAddon(fitter);
    xterm.open(el);
    term.current = xterm;
    fit.current = fitter;
    try {
      fitter.fit();
    } catch {
      /* not laid out yet: the observer fits later */
    }
    const send = (frame: Uint8Array) => socket.current?.send(frame);
    const onData = xterm.onData((d) => send(inputFrame(d)));
    const onBinary = xterm.onBinary((d) =>
      send(inputFrame(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff))),
    );
    const onResize = xterm.onResize(({ cols, rows }) => send(resizeFrame({ columns: cols, rows })));
    let timer: ReturnType<typeof setTimeout> | null = null;
    const observer = new ResizeObserver(() => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        // hidden tab: nothing to measure
        if (el.offsetWidth > 0 && el.offsetHeight > 0) fitter.fit();
      }, FIT_DEBOUNCE_MS);
    });
    observer.observe(el);
    return () => {
      if (timer) clearTimeout(timer);
      observer.disconnect();
      onData.dispose();
      onBinary.dispose();
      onResize.dispose();
      xterm.dispose();
      term.current = null;
      fit.current = null;
    };
  }, []);

  useEffect(() => {
    const xterm = term.current;
    if (!xterm) return;
    setStatus('connecting');
    const conn: TerminalConnection = new TerminalConnection({
      target,
      createSocket,
      size: () => ({ columns: xterm.cols, rows: xterm.rows }),
      onOutput: (data) => xterm.write(data),
      onStatus: (s) => {
        setStartTimeoutS(conn.startTimeoutS);
        setStatus(s);
        if (s === 'starting' || (s === 'open' && target !== 'device')) xterm.focus();
      },
    });
    socket.current = conn;
    return () => {
      conn.dispose();
      if (socket.current === conn) socket.current = null;
    };
  }, [target, generation, createSocket]);

  const reconnect = useCallback(() => {
    term.current?.reset();
    setGeneration((g) => g + 1);
  }, []);

  return (
    <div style={{ display: 'flex', flexDirection: 'column', height: 'calc(100vh - 80px)' }}>
      {status === 'starting' ? (
        <Alert
          type="info"
          style={{ marginBottom: 8 }}
          data-testid={`terminal-starting-${target}`}
          message={
            <Space>
              <Spin size="small" />
              {t('terminal.starting')}
            </Space>
          }
        />
      ) : null}
      {status === 'closed' || status === 'sessionEnded' || status === 'startTimeout' ? (
        <Alert
          type={status === 'closed' ? 'warning' : 'error'}
          showIcon
          style={{ marginBottom: 8 }}
          data-testid={`terminal-closed-${target}`}
          message={
            status === 'sessionEnded'
              ? t('terminal.sessionEnded')
              : status === 'startTimeout'
                ? t('terminal.startTimeout', { seconds: startTimeoutS ?? 0 })
                : t('terminal.closed')
          }
          action={
            <Space>
              <Button size="small" onClick={reconnect} data-testid={`terminal-reconnect-${target}`}>
                {t('terminal.reconnect')}
              </Button>
            </Space>
          }
        />
      ) : null}
      <div
        ref={box}
        data-testid={`terminal-${target}`}
        data-status={status}
        style={{ flex: 1, minHeight: 0, background: '#000', padding: 4 }}
      />
    </div>
  );
}
