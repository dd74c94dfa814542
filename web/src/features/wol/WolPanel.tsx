import { useEffect, useState, type FormEvent } from 'react';
import { Alert, Button, Empty, Form, Input, Space, Spin, Tooltip, Typography } from 'antd';
import { DeleteOutlined, EditOutlined, PoweroffOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { WOL_DEVICES_MAX, WOL_NAME_MAX, type WolDevice } from '@kvm/protocol/wol';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { PlainModal } from '../../components/PlainModal';
import { useMessage } from '../../components/notify';
import { ApiError } from '../../lib/api';
import {
  addWolDevice,
  checkNewDevice,
  checkRename,
  loadWolDevices,
  removeWolDevice,
  renameWolDevice,
  useWol,
  wakeWolDevice,
  WOL_ERROR_TEXT,
  type NewWolDevice,
  type WolFieldError,
} from './wol';

/** The server's reason after the SPEC text, when it gave one. */
function withDetail(text: string, err: unknown): string {
  return err instanceof ApiError && err.error_msg ? `${text}: ${err.error_msg}` : text;
}

function useErrorText() {
  const { t } = useTranslation();
  return (error: WolFieldError | undefined | null) =>
    error
      ? t(WOL_ERROR_TEXT[error], { max: error === 'tooMany' ? WOL_DEVICES_MAX : WOL_NAME_MAX })
      : undefined;
}

function AddForm({ devices, onError }: { devices: WolDevice[]; onError: (text: string) => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const errorText = useErrorText();
  const [name, setName] = useState('');
  const [mac, setMac] = useState('');
  const [errors, setErrors] = useState<NewWolDevice>({});
  const [saving, setSaving] = useState(false);

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    const found = checkNewDevice(name, mac, devices);
    setErrors(found);
    if (found.name || found.mac) return;
    setSaving(true);
    try {
      await addWolDevice(name, mac);
      setName('');
      setMac('');
      void message.success(t('wol.added'));
    } catch (err) {
      const text = withDetail(t('wol.addFailed'), err);
      onError(text);
      void message.error(text);
    } finally {
      setSaving(false);
    }
  };

  return (
    <form onSubmit={(e) => void submit(e)} noValidate>
      <Form.Item
        label={t('wol.name')}
        layout="vertical"
        validateStatus={errors.name ? 'error' : undefined}
        help={errorText(errors.name)}
        style={{ marginBottom: 8 }}
      >
        <Input
          value={name}
          maxLength={WOL_NAME_MAX}
          onChange={(e) => setName(e.target.value)}
          data-testid="wol-add-name"
        />
      </Form.Item>
      <Form.Item
        label={t('wol.mac')}
        layout="vertical"
        validateStatus={errors.mac ? 'error' : undefined}
        help={errorText(errors.mac)}
        style={{ marginBottom: 8 }}
      >
        <Input
          value={mac}
          placeholder={t('wol.macPlaceholder')}
          onChange={(e) => setMac(e.target.value)}
          data-testid="wol-add-mac"
          spellCheck={false}
          autoComplete="off"
        />
      </Form.Item>
      <Button type="primary" htmlType="submit" loading={saving} data-testid="wol-add-submit">
        {t('wol.add')}
      </Button>
    </form>
  );
}

function RenameDialog({ device, onClose }: { device: WolDevice; onClose: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const errorText = useErrorText();
  const [name, setName] = useState(device.name);
  const [error, setError] = useState<WolFieldError | null>(null);

  const save = async (): Promise<boolean> => {
    const found = checkRename(device.name, name);
    setError(found);
    if (found) return false;
    try {
      await renameWolDevice(device.mac, name);
      void message.success(t('wol.renamed'));
      return true;
    } catch (err) {
      void message.error(withDetail(t('wol.renameFailed'), err));
      return false;
    }
  };

  return (
    <PlainModal
      open
      title={t('wol.renameTitle', { name: device.name })}
      beforeOk={save}
      onOk={onClose}
      onCancel={onClose}
      okTestId="wol-rename-ok"
      cancelTestId="wol-rename-cancel"
    >
      <Form.Item
        validateStatus={error ? 'error' : undefined}
        help={errorText(error)}
        style={{ marginBottom: 0 }}
      >
        <Input
          value={name}
          maxLength={WOL_NAME_MAX}
          onChange={(e) => setName(e.target.value)}
          data-testid="wol-rename-input"
          autoFocus
        />
      </Form.Item>
    </PlainModal>
  );
}

/** SPEC 2 wake-on-LAN device list: add (name and MAC), rename, delete, wake. */
export default function WolPanel() {
  const { t } = useTranslation();
  const message = useMessage();
  const devices = useWol((s) => s.devices);
  const status = useWol((s) => s.status);
  const [error, setError] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<WolDevice | null>(null);
  const [removing, setRemoving] = useState<WolDevice | null>(null);
  const [waking, setWaking] = useState<string | null>(null);

  useEffect(() => {
    loadWolDevices().catch((err: unknown) => setError(withDetail(t('wol.loadFailed'), err)));
  }, [t]);

  const wake = async (device: WolDevice) => {
    setWaking(device.mac);
    try {
      await wakeWolDevice(device.mac);
      setError(null);
      void message.success(t('wol.woken', { name: device.name }));
    } catch (err) {
      const text = withDetail(t('wol.wakeFailed'), err);
      setError(text);
      void message.error(text);
    } finally {
      setWaking(null);
    }
  };

  const remove = async (device: WolDevice) => {
    try {
      await removeWolDevice(device.mac);
      void message.success(t('wol.removed'));
    } catch (err) {
      const text = withDetail(t('wol.removeFailed'), err);
      setError(text);
      void message.error(text);
    } finally {
      setRemoving(null);
    }
  };

  return (
    <div data-testid="wol-panel">
      <AddForm devices={devices} onError={setError} />
      {error && (
        <Alert
          type="error"
          showIcon
          closable={{ onClose: () => setError(null) }}
          title={<span data-testid="wol-error">{error}</span>}
          style={{ marginTop: 12 }}
        />
      )}
      <div style={{ marginTop: 16 }}>
        {status === 'loading' && devices.length === 0 ? (
          <div style={{ textAlign: 'center', padding: 16 }}>
            <Spin />
          </div>
        ) : devices.length === 0 ? (
          <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t('wol.empty')} />
        ) : (
          devices.map((device) => (
            <div
              key={device.mac}
              data-testid={`wol-row-${device.mac}`}
              style={{
                display: 'flex',
                alignItems: 'center',
                gap: 8,
                padding: '8px 0',
                borderBottom: '1px solid var(--ant-color-border-secondary, #f0f0f0)',
              }}
            >
              <div style={{ flex: 1, minWidth: 0 }}>
                <Typography.Text strong ellipsis style={{ display: 'block' }}>
                  {device.name}
                </Typography.Text>
                <Typography.Text type="secondary" style={{ fontFamily: 'monospace' }}>
                  {device.mac}
                </Typography.Text>
              </div>
              <Space size={4}>
                <Button
                  type="primary"
                  size="small"
                  icon={<PoweroffOutlined />}
                  loading={waking === device.mac}
                  onClick={() => void wake(device)}
                  data-testid={`wol-wake-${device.mac}`}
                >
                  {t('wol.wake')}
                </Button>
                <Tooltip title={t('wol.rename')}>
                  <Button
                    size="small"
                    type="text"
                    icon={<EditOutlined />}
                    aria-label={t('wol.rename')}
                    onClick={() => setRenaming(device)}
                    data-testid={`wol-rename-${device.mac}`}
                  />
                </Tooltip>
                <Tooltip title={t('wol.remove')}>
                  <Button
                    size="small"
                    type="text"
                    danger
                    icon={<DeleteOutlined />}
                    aria-label={t('wol.remove')}
                    onClick={() => setRemoving(device)}
                    data-testid={`wol-remove-${device.mac}`}
                  />
                </Tooltip>
              </Space>
            </div>
          ))
        )}
      </div>
      {renaming && <RenameDialog device={renaming} onClose={() => setRenaming(null)} />}
      <ConfirmDialog
        open={removing !== null}
        okText={t('wol.remove')}
        onConfirm={() => (removing ? remove(removing) : undefined)}
        onCancel={() => setRemoving(null)}
      >
        {removing ? t('wol.removeConfirm', { name: removing.name, mac: removing.mac }) : null}
      </ConfirmDialog>
    </div>
  );
}
