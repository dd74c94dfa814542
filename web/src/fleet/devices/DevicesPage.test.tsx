import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryRouter, Route, Routes } from 'react-router';
import type { FleetDeviceRow } from '@kvm/protocol/fleet';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { click } from '../../test/dom';
import { flush, render, type Rendered } from '../../test/render';
import { StatusLine } from '../app/FleetApp';
import { useSession } from '../lib/session';
import DevicesPage from './DevicesPage';
import { clearSelection } from './selection';

function row(id: string, name: string, online: boolean): FleetDeviceRow {
  return {
    id,
    name,
    model: 'kvm',
    version: '1.0',
    mac: 'aa:bb:cc:dd:ee:ff',
    serial: id,
    online,
    replica: online ? 'a' : null,
    last_seen: 1_700_000_000_000,
    bound_at: 1,
    owner: 'alice',
    groups: [{ id: 'g1', name: 'lab' }],
  };
}

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  clearSelection();
});

function fleet() {
  return stubFetch({
    '/cloud-basic/v1/groups': () =>
      envelope(200, {
        user_groups: [],
        device_groups: [{ id: 'g1', name: 'lab', device_count: 3, user_groups: [] }],
      }),
    '/cloud-basic/v1/devices': (req) =>
      req.query.get('cursor') === 'c2'
        ? envelope(200, { devices: [row('d3', 'gamma', false)], next: null, total: 3 })
        : envelope(200, {
            devices: [row('d1', 'alpha', true), row('d2', 'beta', false)],
            next: 'c2',
            total: 3,
          }),
    '/cloud-basic/v1/actions': () =>
      envelope(200, { job: { id: 'job-1', name: 'power × 2', state: 'running' } }),
  });
}

async function show() {
  useSession.setState({
    me: {
      id: 'a1',
      username: 'alice',
      email: 'a@example.com',
      region: 'eu',
      role: 'user',
      totp_enabled: false,
      oidc_issuer: null,
      created_at: 1,
    },
  });
  view = await render(
    <MemoryRouter initialEntries={['/devices']}>
      <StatusLine />
      <Routes>
        <Route path="/devices" element={<DevicesPage />} />
        <Route path="/jobs/:id" element={<p data-testid="job-here" />} />
      </Routes>
    </MemoryRouter>,
  );
  await flush(10);
  return view;
}

const rows = () =>
  [...document.querySelectorAll('[data-testid="device-row"]')].map((r) => ({
    id: r.getAttribute('data-device-id'),
    online: r.querySelector('[data-testid="device-online"]')?.getAttribute('data-online'),
  }));

describe('DevicesPage', () => {
  it('lists a page with its total and walks to the next one by the cursor and back', async () => {
    const { requests } = fleet();
    const v = await show();
    expect(rows()).toEqual([
      { id: 'd1', online: 'true' },
      { id: 'd2', online: 'false' },
    ]);
    expect(v.byTestId('device-total')?.textContent).toBe('3 devices');
    expect((v.byTestId('device-open') as HTMLAnchorElement).getAttribute('href')).toBe('/d/d1/');
    expect((v.byTestId('device-prev') as HTMLButtonElement).disabled).toBe(true);
    click(v.byTestId('device-next'));
    await flush();
    expect(rows()).toEqual([{ id: 'd3', online: 'false' }]);
    expect(
      requests
        .filter((r) => r.path.endsWith('/devices'))
        .at(-1)
        ?.query.get('cursor'),
    ).toBe('c2');
    click(v.byTestId('device-prev'));
    await flush();
    expect(rows().map((r) => r.id)).toEqual(['d1', 'd2']);
  });

  it('runs a batch action on the selected devices after confirming, then shows the job', async () => {
    const { requests } = fleet();
    const v = await show();
    expect(v.byTestId('batch-bar')).toBeNull();
    click(v.byTestId('device-select-all'));
    await flush();
    expect(v.byTestId('batch-count')?.textContent).toBe('2 selected');
    click(v.byTestId('batch-run'));
    await flush();
    click(v.byTestId('confirm-ok'));
    await flush();
    const posted = requests.filter((r) => r.path.endsWith('/actions'));
    expect(posted.map((r) => [r.method, JSON.parse(r.body ?? '{}')])).toEqual([
      ['POST', { action: 'power', devices: ['d1', 'd2'] }],
    ]);
    expect(v.byTestId('job-here')).not.toBeNull();
  });
});
