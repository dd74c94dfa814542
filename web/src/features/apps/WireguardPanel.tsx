import { useCallback, useEffect, useRef, useState } from 'react';
import { Alert, Button, Descriptions, Divider, Space, Table, Typography } from 'antd';
import { QrcodeOutlined, UploadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { APP_STATUS_POLL_MS, type AppSummary } from '@kvm/protocol/apps';
import {
  parseWgQuick,
  WgConfigError,
  type WgPeerStatus,
  type WgStatus,
} from '@kvm/protocol/wireguard';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { wireguardRemove, wireguardSetConfig, wireguardStatus } from './apps-api';
import { loadApps } from './apps-store';
import { formatBytes, usePoll } from './app-text';
import { UnbindButton } from './UnbindButton';
import { decodeQrImage, ImportError, readConfFile } from './wg-import';

/** `now`: when the status was read (unix seconds). */
function HandshakeAge({ at, now }: { at: number; now: number }) {
  const { t } = useTranslation();
  if (at <= 0) return <span>{t('apps.wireguard.noHandshake')}</span>;
  const seconds = Math.max(0, Math.round(now - at));
  return <span>{t('apps.wireguard.handshakeAgo', { seconds })}</span>;
}

function PeersTable({ peers, now }: { peers: WgPeerStatus[]; now: number }) {
  const { t } = useTranslation();
  return (
    <Table<WgPeerStatus>
      size="small"
      pagination={false}
      rowKey="public_key"
      dataSource={peers}
      data-testid="wireguard-peers"
      columns={[
        {
          key: 'peer',
          title: t('apps.wireguard.peer'),
          render: (_, peer) => (
            <Space orientation="vertical" size={0}>
              <Typography.Text code style={{ fontSize: 11 }}>
                {peer.public_key}
              </Typography.Text>
              {peer.endpoint && <Typography.Text type="secondary">{peer.endpoint}</Typography.Text>}
              <Typography.Text type="secondary">{peer.allowed_ips.join(', ')}</Typography.Text>
            </Space>
          ),
        },
        {
          key: 'handshake',
          title: t('apps.wireguard.handshake'),
          render: (_, peer) => (
            <span data-testid="wireguard-handshake" data-at={peer.latest_handshake}>
              <HandshakeAge at={peer.latest_handshake} now={now} />
            </span>
          ),
        },
        {
          key: 'transfer',
          title: t('apps.wireguard.transfer'),
          render: (_, peer) => (
            <span data-testid="wireguard-transfer" data-rx={peer.rx_bytes} data-tx={peer.tx_bytes}>
              {t('apps.wireguard.rxTx', {
                rx: formatBytes(peer.rx_bytes),
                tx: formatBytes(peer.tx_bytes),
              })}
            </span>
          ),
        },
      ]}
    />
  );
}

function StatusSection({ status, now }: { status: WgStatus; now: number }) {
  const { t } = useTranslation();
  const items = [
    {
      key: 'interface',
      label: t('apps.wireguard.interface'),
      children: <span data-testid="wireguard-interface">{status.interface ?? '—'}</span>,
    },
    {
      key: 'key',
      label: t('apps.wireguard.publicKey'),
      children: (
        <Typography.Text code copyable={!!status.public_key} data-testid="wireguard-public-key">
          {status.public_key ?? '—'}
        </Typography.Text>
      ),
    },
    {
      key: 'addresses',
      label: t('apps.addresses'),
      children: <span data-testid="wireguard-addresses">{status.addresses.join(', ') || '—'}</span>,
    },
  ];
  if (status.listen_port !== null) {
    items.push({
      key: 'port',
      label: t('apps.wireguard.listenPort'),
      children: <span>{status.listen_port}</span>,
    });
  }
  return (
    <div data-testid="wireguard-status">
      <Descriptions size="small" column={1} items={items} />
      {status.peers.length > 0 && <PeersTable peers={status.peers} now={now} />}
    </div>
  );
}

/**
 * The configuration editor. The text (with its private key) lives only in the textarea, never
 * in React state or a store: it is read when sent and the textarea is emptied once the device
 * answered. The browser checks it with parseWgQuick first (the error with its line, nothing
 * sent); the device checks again and its answer counts.
 */
function ConfigEditor({ onSaved }: { onSaved: () => Promise<void> }) {
  const { t } = useTranslation();
  const message = useMessage();
  const area = useRef<HTMLTextAreaElement>(null);
  const confInput = useRef<HTMLInputElement>(null);
  const qrInput = useRef<HTMLInputElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const setText = (text: string) => {
    if (area.current) area.current.value = text;
    setError(null);
  };

  const importFailed = (err: unknown) => {
    const reason = err instanceof ImportError ? err.reason : 'bad_image';
    setError(t(`apps.wireguard.import.${reason}`));
  };

  const onConf = async (file: File | undefined) => {
    if (!file) return;
    try {
      setText(await readConfFile(file));
    } catch (err) {
      importFailed(err);
    } finally {
      if (confInput.current) confInput.current.value = '';
    }
  };

  const onQr = async (file: File | undefined) => {
    if (!file) return;
    try {
      setText(await decodeQrImage(file));
    } catch (err) {
      importFailed(err);
    } finally {
      if (qrInput.current) qrInput.current.value = '';
    }
  };

  const send = async () => {
    const text = area.current?.value ?? '';
    if (!text.trim()) {
      setError(t('apps.wireguard.empty'));
      return;
    }
    try {
      parseWgQuick(text);
    } catch (err) {
      if (err instanceof WgConfigError) {
        setError(
          err.line === null
            ? err.message
            : t('apps.wireguard.lineError', { line: err.line, message: err.message }),
        );
        return;
      }
      throw err;
    }
    setError(null);
    setBusy(true);
    let saved = false;
    try {
      await wireguardSetConfig(text);
      saved = true;
    } catch (err) {
      setError(withDetail(t('apps.wireguard.refused'), err));
    } finally {
      // The key leaves the page with the send, whatever the answer, and before the status
      // that the answer brings is drawn.
      if (area.current) area.current.value = '';
    }
    try {
      if (saved) {
        void message.success(t('apps.wireguard.saved'));
        await onSaved();
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <Space orientation="vertical" style={{ width: '100%' }} data-testid="wireguard-editor">
      <Typography.Text>{t('apps.wireguard.pasteHint')}</Typography.Text>
      <textarea
        ref={area}
        className="ant-input"
        rows={10}
        spellCheck={false}
        autoComplete="off"
        placeholder={
          '[Interface]\nPrivateKey = …\nAddress = 10.0.0.2/24\n\n[Peer]\nPublicKey = …\nAllowedIPs = 10.0.0.0/24\nEndpoint = vpn.example.com:51820'
        }
        style={{ fontFamily: 'monospace', fontSize: 12, width: '100%' }}
        onChange={() => setError(null)}
        data-testid="wireguard-config"
      />
      <Space wrap>
        <Button
          icon={<UploadOutlined />}
          onClick={() => confInput.current?.click()}
          data-testid="wireguard-upload"
        >
          {t('apps.wireguard.upload')}
        </Button>
        <Button
          icon={<QrcodeOutlined />}
          onClick={() => qrInput.current?.click()}
          data-testid="wireguard-qr"
        >
          {t('apps.wireguard.qr')}
        </Button>
        <Button
          type="primary"
          loading={busy}
          onClick={() => void send()}
          data-testid="wireguard-send"
        >
          {t('apps.wireguard.send')}
        </Button>
      </Space>
      <input
        ref={confInput}
        type="file"
        accept=".conf,text/plain"
        hidden
        onChange={(e) => void onConf(e.target.files?.[0])}
        data-testid="wireguard-upload-file"
      />
      <input
        ref={qrInput}
        type="file"
        accept="image/*"
        hidden
        onChange={(e) => void onQr(e.target.files?.[0])}
        data-testid="wireguard-qr-file"
      />
      {error && (
        <Alert type="error" showIcon title={<span data-testid="wireguard-error">{error}</span>} />
      )}
    </Space>
  );
}

/**
 * WireGuard (`/api/wireguard/*`): a wg-quick configuration pasted, uploaded or scanned from a QR
 * picture; its status (handshake age, rx/tx per peer, addresses, public key); start and stop
 * (the run switch); remove after a confirmation.
 */
export function WireguardPanel({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  const [read, setRead] = useState<{ status: WgStatus; now: number } | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const status = read?.status ?? null;

  const refresh = useCallback(
    () =>
      wireguardStatus().then(
        (next) => {
          setRead({ status: next, now: Date.now() / 1000 });
          setLoadError(null);
        },
        (err: unknown) => setLoadError(withDetail(t('apps.loadFailed'), err)),
      ),
    [t],
  );
  useEffect(() => {
    wireguardStatus().then(
      (next) => setRead({ status: next, now: Date.now() / 1000 }),
      (err: unknown) => setLoadError(withDetail(t('apps.loadFailed'), err)),
    );
  }, [t]);
  usePoll(refresh, APP_STATUS_POLL_MS);

  const saved = async () => {
    await refresh();
    await loadApps().catch(() => undefined);
  };

  return (
    <div data-testid="wireguard-panel">
      {loadError && (
        <Alert
          type="error"
          showIcon
          title={<span data-testid="wireguard-load-error">{loadError}</span>}
        />
      )}
      {read?.status.configured && <StatusSection status={read.status} now={read.now} />}
      <Divider style={{ margin: '12px 0' }} />
      <Typography.Text strong>
        {status?.configured ? t('apps.wireguard.replace') : t('apps.wireguard.configure')}
      </Typography.Text>
      <ConfigEditor onSaved={saved} />
      {status?.configured && (
        <>
          <Divider style={{ margin: '12px 0' }} />
          <UnbindButton
            name={app.name}
            testId="wireguard-remove"
            text={t('apps.wireguard.remove')}
            onUnbind={async () => {
              await wireguardRemove();
              await refresh();
            }}
          />
        </>
      )}
    </div>
  );
}
