import { useSyncExternalStore } from 'react';
import { Button, Spin } from 'antd';
import { useTranslation } from 'react-i18next';
import { useLocation } from 'react-router';
import { useEmbed } from '../../components/hooks';
import { normalizePath } from '../../lib/path';
import { heartbeat } from './connection';

export interface ConnectionLostViewProps {
  embedded: boolean;
  showRefresh: boolean;
  onRefresh: () => void;
}

const HINTS = [
  'common.connectionLostHints.network',
  'common.connectionLostHints.power',
  'common.connectionLostHints.rebooting',
] as const;

/** SPEC 2: covers the screen while the heartbeat is lost; three hints; optional refresh. */
export function ConnectionLostView({ embedded, showRefresh, onRefresh }: ConnectionLostViewProps) {
  const { t } = useTranslation();
  return (
    <div
      data-testid="connection-lost"
      role="alertdialog"
      aria-live="assertive"
      style={{
        position: 'fixed',
        inset: 0,
        zIndex: 2000,
        display: 'flex',
        alignItems: 'center',
        justifyContent: 'center',
        background: 'rgba(0, 0, 0, 0.72)',
        color: '#fff',
        padding: 24,
      }}
    >
      <div style={{ maxWidth: 520, textAlign: 'center' }}>
        <Spin size="large" />
        <p style={{ fontSize: 18, margin: '16px 0' }}>
          {t(embedded ? 'common.connectionLost' : 'common.connectionLostWithTip')}
        </p>
        <ol style={{ textAlign: 'left', lineHeight: 1.8 }}>
          {HINTS.map((key) => (
            <li key={key}>{t(key)}</li>
          ))}
        </ol>
        {/* SPEC 2: only when showRefreshOnConnectionLost is on and not embedded. */}
        {showRefresh && !embedded && (
          <Button type="primary" onClick={onRefresh} data-testid="connection-lost-refresh">
            {t('common.refresh')}
          </Button>
        )}
      </div>
    </div>
  );
}

export function ConnectionLostOverlay() {
  const state = useSyncExternalStore(heartbeat.subscribe, heartbeat.getState);
  const { embedded, showRefreshOnConnectionLost } = useEmbed();
  const { pathname } = useLocation();
  // SPEC 2: never on /upgrading (the device reboots there on purpose).
  if (state !== 'lost' || normalizePath(pathname) === '/upgrading') return null;
  return (
    <ConnectionLostView
      embedded={embedded}
      showRefresh={showRefreshOnConnectionLost}
      onRefresh={() => window.location.reload()}
    />
  );
}
