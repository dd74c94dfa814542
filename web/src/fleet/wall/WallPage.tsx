/**
 * The screen wall (/wall): the visible devices as tiles, 100 a page, by device group; each the
 * latest picture from the wall socket (WallClient owns it), the name, online / offline /
 * no-signal and the picture's age. Only the tiles on screen are watched (IntersectionObserver);
 * a hidden tab pauses. A click opens the device's console.
 */
import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { Tag } from 'antd';
import type { FleetDeviceRow } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { fmtAge } from '../lib/format';
import { showError } from '../lib/session';
import { WallClient } from '../lib/wall-client';
import { DeviceQuery } from '../devices/device-query';
import { DeviceGroupSelect, PageButtons } from '../devices/DeviceListParts';

export const WALL_PAGE_SIZE = 100;

function Tile(props: {
  device: FleetDeviceRow;
  client: WallClient;
  now: number;
  observer: IntersectionObserver;
  gone: (id: string) => void;
}) {
  const { device, client, now, observer, gone } = props;
  const t = useT();
  const ref = useRef<HTMLDivElement>(null);
  useSyncExternalStore(client.subscribe, client.getVersion);
  const tile = client.tile(device.id);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    observer.observe(el);
    return () => {
      observer.unobserve(el);
      gone(device.id);
    };
  }, [observer, gone, device.id]);
  const online = tile?.online ?? device.online;
  const badge = !online ? 'offline' : tile && !tile.signal ? 'nosignal' : 'online';
  const open = () => window.open(`/d/${encodeURIComponent(device.id)}/`, '_blank', 'noopener');
  return (
    <div
      ref={ref}
      className="fleet-tile"
      role="link"
      tabIndex={0}
      aria-label={t('wall.openName', { name: device.name })}
      data-testid="wall-tile"
      data-device-id={device.id}
      data-state={badge}
      onClick={open}
      onKeyDown={(e) => {
        if (e.key === 'Enter') open();
      }}
    >
      <div className="pic">
        {tile?.url ? (
          <img src={tile.url} alt={device.name} data-testid="wall-image" />
        ) : (
          <span>{t('wall.noPicture')}</span>
        )}
      </div>
      <div className="cap">
        <span data-testid="wall-name">{device.name}</span>
        <span>
          <Tag
            color={badge === 'online' ? 'success' : badge === 'offline' ? 'default' : 'warning'}
            data-testid="wall-badge"
          >
            {t(`wall.${badge}`)}
          </Tag>
          <span data-testid="wall-age">{fmtAge(tile?.at, now)}</span>
        </span>
      </div>
    </div>
  );
}

export default function WallPage() {
  const t = useT();
  const [client] = useState(() => new WallClient());
  // the tiles on screen are the ones watched
  const [onScreen] = useState(() => new Set<string>());
  const [observer] = useState(
    () =>
      new IntersectionObserver((entries) => {
        for (const e of entries) {
          const id = (e.target as HTMLElement).dataset.deviceId;
          if (!id) continue;
          if (e.isIntersecting) onScreen.add(id);
          else onScreen.delete(id);
        }
        client.watch([...onScreen]);
      }),
  );
  const [query] = useState(() => new DeviceQuery(WALL_PAGE_SIZE));
  const snap = useSyncExternalStore(query.subscribe, query.getSnapshot);
  const page = snap.page;
  const [group, setGroup] = useState('');
  const [now, setNow] = useState(() => Date.now());

  useEffect(() => {
    client.start();
    const onVisibility = () => client.setVisible(document.visibilityState !== 'hidden');
    onVisibility();
    document.addEventListener('visibilitychange', onVisibility);
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => {
      document.removeEventListener('visibilitychange', onVisibility);
      clearInterval(tick);
      client.stop();
    };
  }, [client]);

  useEffect(() => () => observer.disconnect(), [observer]);

  const gone = useCallback(
    (id: string) => {
      if (onScreen.delete(id)) client.watch([...onScreen]);
    },
    [client, onScreen],
  );

  useEffect(() => {
    query.setFilter({ q: '', group, online: '' }).catch(showError);
  }, [query, group]);

  return (
    <section data-testid="view-wall">
      <h2>{t('wall.title')}</h2>
      <div className="fleet-bar">
        <DeviceGroupSelect value={group} onChange={setGroup} testId="wall-group-filter" />
        <span data-testid="wall-total">{t('devices.total', { n: page?.total ?? 0 })}</span>
        <PageButtons query={query} snap={snap} prefix="wall" />
      </div>
      <div className="fleet-wall">
        {(page?.devices ?? []).map((d) => (
          <Tile key={d.id} device={d} client={client} now={now} observer={observer} gone={gone} />
        ))}
      </div>
    </section>
  );
}
