import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, type Rendered } from '../../test/render';
import { ConnectionLostView } from './ConnectionLostOverlay';
import en from '../../i18n/en.json';

describe('ConnectionLostView (SPEC 2)', () => {
  let view: Rendered | undefined;
  afterEach(() => view?.unmount());

  it('shows the tip text, three hints and a working refresh button when not embedded', async () => {
    const onRefresh = vi.fn();
    view = await render(<ConnectionLostView embedded={false} showRefresh onRefresh={onRefresh} />);
    const overlay = view.byTestId('connection-lost');
    expect(overlay?.textContent).toContain(en.common.connectionLostWithTip);
    expect(overlay?.querySelectorAll('li')).toHaveLength(3);
    const refresh = view.byTestId('connection-lost-refresh');
    expect(refresh).not.toBeNull();
    refresh?.click();
    expect(onRefresh).toHaveBeenCalledOnce();
  });

  it('uses the plain text and no refresh button when embedded', async () => {
    view = await render(<ConnectionLostView embedded showRefresh onRefresh={() => undefined} />);
    const text = view.byTestId('connection-lost')?.textContent ?? '';
    expect(text).toContain(en.common.connectionLost);
    expect(text).not.toContain(en.common.connectionLostWithTip);
    expect(view.byTestId('connection-lost-refresh')).toBeNull();
  });

  it('hides the refresh button when showRefreshOnConnectionLost is off', async () => {
    view = await render(
      <ConnectionLostView embedded={false} showRefresh={false} onRefresh={() => undefined} />,
    );
    expect(view.byTestId('connection-lost')).not.toBeNull();
    expect(view.byTestId('connection-lost-refresh')).toBeNull();
  });
});
