import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { FakeWebSocket } from '../../test/fake-websocket';
import { flush, render, type Rendered } from '../../test/render';
import { TerminalView } from './TerminalView';

const createSocket = (url: string) => new FakeWebSocket(url);

async function waitFor(check: () => boolean, what: string) {
  for (let i = 0; i < 200; i += 1) {
    if (check()) return;
    await flush(1);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('TerminalView (happy-dom)', () => {
  let view: Rendered | undefined;
  beforeEach(() => FakeWebSocket.reset());
  afterEach(() => {
    view?.unmount();
    view = undefined;
  });

  it('shows "Starting shell…" until the shell prints, then the terminal alone', async () => {
    view = await render(<TerminalView target="device" createSocket={createSocket} />);
    await waitFor(() => FakeWebSocket.instances.length > 0, 'the socket');
    const ws = FakeWebSocket.last();
    expect(view.byTestId('terminal-starting-device')).toBeNull();
    await act(async () => ws.open());
    await waitFor(() => view?.byTestId('terminal-starting-device') !== null, 'the notice');
    expect(view.byTestId('terminal-starting-device')?.textContent).toContain(en.terminal.starting);
    expect(view.byTestId('terminal-device')?.dataset['status']).toBe('starting');
    await act(async () => ws.receive(new TextEncoder().encode('0$ ').buffer));
    await waitFor(() => view?.byTestId('terminal-starting-device') === null, 'the notice to go');
    expect(view.byTestId('terminal-device')?.dataset['status']).toBe('open');
  });

  it('says the shell never prompted when the server ends it for that', async () => {
    view = await render(<TerminalView target="device" createSocket={createSocket} />);
    await waitFor(() => FakeWebSocket.instances.length > 0, 'the socket');
    const ws = FakeWebSocket.last();
    await act(async () => ws.open());
    await act(async () => ws.onclose?.({ code: 1000, reason: 'start timeout 30' } as CloseEvent));
    await waitFor(() => view?.byTestId('terminal-closed-device') !== null, 'the message');
    expect(view.byTestId('terminal-closed-device')?.textContent).toContain(
      en.terminal.startTimeout.replace('{{seconds}}', '30'),
    );
    expect(view.byTestId('terminal-starting-device')).toBeNull();
    expect(view.byTestId('terminal-reconnect-device')).not.toBeNull();
  });

  it('has the texts in Chinese too', () => {
    expect(zh.terminal.starting).toBeTruthy();
    expect(zh.terminal.startTimeout).toContain('{{seconds}}');
  });
});
