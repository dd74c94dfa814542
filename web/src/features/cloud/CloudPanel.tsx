import { useEffect, useState } from 'react';
import {
  Alert,
  Button,
  Descriptions,
  Divider,
  Space,
  Spin,
  Switch,
  Tabs,
  Tag,
  Typography,
} from 'antd';
import { useTranslation } from 'react-i18next';
import type { CloudStatus } from '@kvm/protocol/cloud';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { LoginForm, SignUpForm } from './AccountForms';
import { BindByCode } from './BindByCode';
import { loadCloudStatus, pauseBindPolling, setCloudEnabled, useCloud } from './cloud-store';
import { STATE_COLOR, STATE_TEXT } from './cloud-text';
import { ServerSection } from './ServerSection';
import { UnbindDialog } from './UnbindDialog';

function EnableSwitch({ status }: { status: CloudStatus }) {
  const { t } = useTranslation();
  const message = useMessage();
  const [asking, setAsking] = useState<boolean | null>(null);

  const apply = async () => {
    if (asking === null) return;
    try {
      await setCloudEnabled(asking);
    } catch (err) {
      void message.error(withDetail(t('cloud.settingFailed'), err));
      throw err;
    }
    setAsking(null);
  };

  return (
    <Space style={{ width: '100%', justifyContent: 'space-between' }}>
      <Typography.Text strong>{t('cloud.service')}</Typography.Text>
      <Switch
        checked={status.enabled}
        onChange={(next) => setAsking(next)}
        data-testid="cloud-enable"
      />
      <ConfirmDialog open={asking !== null} onConfirm={apply} onCancel={() => setAsking(null)}>
        <span data-testid="cloud-enable-confirm">
          {asking ? t('cloud.enableConfirm') : t('cloud.disableConfirm')}
        </span>
      </ConfirmDialog>
    </Space>
  );
}

/** SPEC 4's binding info: device ID, MAC, S/N, bound account; and the agent's state. */
function BindingInfo({ status }: { status: CloudStatus }) {
  const { t } = useTranslation();
  const items = [
    {
      key: 'state',
      label: t('cloud.status'),
      children: (
        <Space size={4} wrap>
          <Tag
            color={STATE_COLOR[status.state]}
            data-testid="cloud-state"
            data-state={status.state}
          >
            {t(STATE_TEXT[status.state])}
          </Tag>
          <Tag data-testid="cloud-bound" data-bound={String(status.bound)}>
            {status.bound ? t('cloud.bound') : t('cloud.unbound')}
          </Tag>
        </Space>
      ),
    },
    { key: 'id', label: t('cloud.info.deviceId'), children: status.device.id ?? '—' },
    { key: 'mac', label: t('cloud.info.mac'), children: status.device.mac || '—' },
    { key: 'sn', label: t('cloud.info.serial'), children: status.device.serial || '—' },
    {
      key: 'account',
      label: t('cloud.info.account'),
      children: (
        <span data-testid="cloud-account">
          {status.account ? `${status.account.username} (${status.account.email})` : '—'}
        </span>
      ),
    },
  ];
  if (status.replica) {
    items.push({ key: 'replica', label: t('cloud.info.replica'), children: status.replica });
  }
  return <Descriptions size="small" column={1} items={items} data-testid="cloud-info" />;
}

function BindSection() {
  const { t } = useTranslation();
  const [account, setAccount] = useState<'login' | 'signup'>('login');
  // SPEC 6: the region and the account login appear only in the cloud-account tab.
  return (
    <Tabs
      data-testid="cloud-bind"
      items={[
        { key: 'code', label: t('cloud.bind.byCode'), children: <BindByCode /> },
        {
          key: 'account',
          label: <span data-testid="cloud-tab-account">{t('cloud.bind.byAccount')}</span>,
          children:
            account === 'login' ? (
              <LoginForm onSignUp={() => setAccount('signup')} />
            ) : (
              <SignUpForm onLogin={() => setAccount('login')} />
            ),
        },
      ]}
    />
  );
}

/**
 * SPEC 2's cloud service panel (SPEC 4 "Cloud", docs/cloud.md): enabled or disabled, the fleet
 * server, bound or unbound with the binding info, bind by code or with a cloud account (login
 * or sign-up), unbind. The state comes from the device and its `cloud` event.
 */
export default function CloudPanel() {
  const { t } = useTranslation();
  const status = useCloud((s) => s.status);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [unbinding, setUnbinding] = useState(false);

  useEffect(() => {
    loadCloudStatus().catch((err: unknown) => setLoadError(withDetail(t('cloud.loadFailed'), err)));
    return () => pauseBindPolling();
  }, [t]);

  if (!status) {
    return (
      <div data-testid="cloud-panel">
        {loadError ? (
          <Alert
            type="error"
            showIcon
            title={<span data-testid="cloud-load-error">{loadError}</span>}
          />
        ) : (
          <div style={{ textAlign: 'center', padding: 24 }}>
            <Spin />
          </div>
        )}
      </div>
    );
  }

  return (
    <div data-testid="cloud-panel">
      <EnableSwitch status={status} />
      {!status.enabled && (
        <Typography.Paragraph
          type="secondary"
          style={{ marginTop: 8 }}
          data-testid="cloud-disabled"
        >
          {t('cloud.disabledHint')}
        </Typography.Paragraph>
      )}
      <Divider style={{ margin: '12px 0' }} />
      <BindingInfo status={status} />
      {status.state === 'revoked' && (
        <Alert type="warning" showIcon title={t('cloud.revokedHint')} data-testid="cloud-revoked" />
      )}
      {status.error && status.state !== 'online' && (
        <Alert
          type="error"
          showIcon
          style={{ marginTop: 8 }}
          title={
            <span data-testid="cloud-error">
              {t('cloud.info.error')}: {status.error}
            </span>
          }
        />
      )}
      {status.enabled && (
        <>
          <Divider style={{ margin: '12px 0' }} />
          <ServerSection status={status} />
        </>
      )}
      {status.enabled && status.url && !status.bound && (
        <>
          <Divider style={{ margin: '12px 0' }} />
          <BindSection />
        </>
      )}
      {status.bound && (
        <>
          <Divider style={{ margin: '12px 0' }} />
          <Button danger onClick={() => setUnbinding(true)} data-testid="cloud-unbind">
            {t('cloud.unbind.button')}
          </Button>
          {unbinding && <UnbindDialog onClose={() => setUnbinding(false)} />}
        </>
      )}
    </div>
  );
}
