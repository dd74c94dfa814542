import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryRouter, Route, Routes } from 'react-router';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { pressAsync as press, waitForSelector as waitFor } from '../../test/dom';
import { type Rendered, renderPanel } from '../../test/render';
import { useLayout } from './layout-store';
import MainLayout from './MainLayout';

let view: Rendered | undefined;

beforeEach(() => {
  useLayout.setState({ leftPanel: 'none', toolbarCollapsed: false });
  stubFetch({
    '/api/atx': () => envelope(200, { enabled: false, busy: false, leds: {} }),
    '/api/fingerbot/exist': () => envelope(200, { exist: false }),
    '/api/wol/devices': () => envelope(200, { devices: [] }),
  });
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

describe('left panel sections (SPEC 2)', () => {
  it('the toolbar opens the toolbox and the external devices, one at a time, and closes them', async () => {
    view = await renderPanel(
      <MemoryRouter initialEntries={['/']}>
        <Routes>
          <Route path="/" element={<MainLayout />} />
        </Routes>
      </MemoryRouter>,
    );
    const v = view;
    const pressed = (id: string) => v.byTestId(id)?.getAttribute('aria-pressed');
    expect(v.byTestId('left-panel')).toBeNull();

    await press(v.byTestId('toolbar-toolbox'));
    expect(v.byTestId('left-panel')?.dataset['section']).toBe('toolbox');
    expect(pressed('toolbar-toolbox')).toBe('true');
    await waitFor('[data-testid="toolbox-panel"]');

    await press(v.byTestId('toolbar-external'));
    expect(v.byTestId('left-panel')?.dataset['section']).toBe('externalDevices');
    expect(pressed('toolbar-toolbox')).toBe('false');
    expect(pressed('toolbar-external')).toBe('true');
    await waitFor('[data-testid="external-panel"]');
    expect(v.byTestId('toolbox-panel')).toBeNull();
    expect(v.byTestId('left-panel')?.style.width).toBe('320px');

    await press(v.byTestId('toolbar-external'));
    expect(v.byTestId('left-panel')).toBeNull();
    expect(useLayout.getState().leftPanel).toBe('none');
  });
});
