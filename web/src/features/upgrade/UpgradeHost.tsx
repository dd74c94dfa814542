import { useEffect, useState } from 'react';
import { preload } from '../../lib/preload';
import { Alert, Button, Checkbox, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useNavigate } from 'react-router';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { StackedNotice } from '../../components/NoticeStack';
import { useMessage } from '../../components/notify';
import {
  answerCancelDownload,
  beginDownload,
  canInstall,
  checkStatus,
  checkVersion,
  dismissConfirm,
  dismissDowngrade,
  dismissTip,
  offeredVersion,
  resumeDownload,
  runUpgrade,
  tipVersion,
  useUpgrade,
  type FailedCheck,
} from './upgrade-store';

const CHECK_TEXT = {
  signature: 'upgrade.signatureInvalid',
  firmware: 'upgrade.firmwareInvalid',
} as const;

/** One toast for start's answer: a second failure replaces the first instead of stacking. */
const START_TOAST_KEY = 'upgrade-start';

/**
 * The FAILED toast: which check failed (or the generic text) and the device's message where it
 * adds something (which file, which model). A bad signature's text already says all the
 * device's message would (issue 21: the toast said it twice).
 */
export function useFailedText(): (check: FailedCheck, message: string) => string {
  const { t } = useTranslation();
  return (check, message) => {
    const text = t(check ? CHECK_TEXT[check] : 'upgrade.failed');
    const detail = check === 'signature' ? '' : message.trim();
    return detail ? t('upgrade.failedDetail', { text, message: detail }) : text;
  };
}

/** What the console does with the answer of start (SPEC 4 step 4). */
export function useUpgradeOutcome(): (
  saveConfig: boolean,
  opts?: { allowDowngrade?: boolean },
) => Promise<void> {
  const { t } = useTranslation();
  const message = useMessage();
  const navigate = useNavigate();
  const failedText = useFailedText();
  return async (saveConfig, opts = {}) => {
    const outcome = await runUpgrade(saveConfig, opts);
    if (outcome.kind === 'started') {
      void message.open({ type: 'success', key: START_TOAST_KEY, content: t('upgrade.started') });
      void navigate('/upgrading');
      return;
    }
    // An older release: the downgrade dialog asks (ConfirmDowngrade), no toast.
    if (outcome.kind === 'downgrade') return;
    void message.open({
      type: 'error',
      key: START_TOAST_KEY,
      content: failedText(outcome.check, outcome.message),
    });
  };
}

/** The confirm of SPEC 4 step 3, with the save-config option (checked by default). */
function ConfirmUpgrade() {
  const source = useUpgrade((s) => s.confirm);
  // Keyed by the source: every opening starts with save-config checked again.
  return <ConfirmUpgradeDialog key={source ?? 'closed'} source={source} />;
}

function ConfirmUpgradeDialog({ source }: { source: 'download' | 'upload' | null }) {
  const { t } = useTranslation();
  const version = useUpgrade((s) => s.downloadVersion ?? offeredVersion(s.compare));
  const [saveConfig, setSaveConfig] = useState(true);
  const upgrade = useUpgradeOutcome();

  useEffect(() => {
    // The device restarts 1 s after start answers: /upgrading must not need the server then.
    if (source) preload('upgrading');
  }, [source]);

  return (
    <ConfirmDialog
      open={source !== null}
      okText={t('upgrade.upgradeNow')}
      onConfirm={() => upgrade(saveConfig)}
      onCancel={dismissConfirm}
    >
      <Space direction="vertical" data-testid="upgrade-confirm">
        <Typography.Text>
          {source === 'download' && version
            ? t('upgrade.confirmDownloaded', { version })
            : t('upgrade.confirmUploaded')}
        </Typography.Text>
        <Typography.Text type="warning">{t('upgrade.confirmWarning')}</Typography.Text>
        <Checkbox
          checked={saveConfig}
          onChange={(event) => setSaveConfig(event.target.checked)}
          data-testid="upgrade-save-config"
        >
          {t('upgrade.saveConfig')}
        </Checkbox>
      </Space>
    </ConfirmDialog>
  );
}

/**
 * start refused an older release (409 UpgradeDowngradeError): installing it is the admin's
 * confirmed choice, never a side effect of "Upgrade".
 */
function ConfirmDowngrade() {
  const { t } = useTranslation();
  const downgrade = useUpgrade((s) => s.downgrade);
  const upgrade = useUpgradeOutcome();
  return (
    <ConfirmDialog
      open={downgrade !== null}
      okText={t('upgrade.downgradeOk')}
      onConfirm={() => upgrade(downgrade?.saveConfig ?? true, { allowDowngrade: true })}
      onCancel={dismissDowngrade}
    >
      <Space direction="vertical" data-testid="upgrade-downgrade">
        <Typography.Text>
          {t('upgrade.downgradeAsk', {
            package: downgrade?.packageVersion || '—',
            running: downgrade?.localVersion || '—',
          })}
        </Typography.Text>
        <Typography.Text type="warning">{t('upgrade.downgradeWarning')}</Typography.Text>
      </Space>
    </ConfirmDialog>
  );
}

function AskCancelDownload() {
  const { t } = useTranslation();
  const open = useUpgrade((s) => s.askCancelDownload);
  return (
    <ConfirmDialog
      open={open}
      okText={t('upgrade.cancelDownload')}
      cancelText={t('upgrade.keepDownload')}
      onConfirm={() => answerCancelDownload(true)}
      onCancel={() => void answerCancelDownload(false)}
    >
      <span data-testid="upgrade-ask-cancel-download">{t('upgrade.askCancelDownload')}</span>
    </ConfirmDialog>
  );
}

/** SPEC 4 step 1: the new-version tip, remembered per server version. */
function NewVersionTip() {
  const { t } = useTranslation();
  const message = useMessage();
  const version = useUpgrade(tipVersion);
  const downloading = useUpgrade((s) => s.download.status !== 'none');
  const installable = useUpgrade(canInstall);
  if (!version) return null;
  // In the notice stack: other notices (the video fallback) take rows of their own.
  return (
    <StackedNotice>
      <Alert
        data-testid="upgrade-tip"
        type="info"
        showIcon
        closable
        onClose={dismissTip}
        style={{ maxWidth: 360 }}
        title={t('upgrade.tip', { version })}
        description={installable ? undefined : t('upgrade.cannotInstall')}
        action={
          installable && (
            <Button
              size="small"
              type="primary"
              disabled={downloading}
              data-testid="upgrade-tip-download"
              onClick={() => {
                dismissTip();
                beginDownload().catch(() => void message.error(t('upgrade.downloadFailed')));
              }}
            >
              {t('upgrade.download')}
            </Button>
          )
        }
      />
    </StackedNotice>
  );
}

/**
 * Mounted once in the main layout: the version check on load, the tip, and the dialogs of a
 * download that finishes in the background or an uploaded package.
 */
export default function UpgradeHost() {
  useEffect(() => {
    void checkVersion();
    void checkStatus();
    void resumeDownload();
  }, []);
  return (
    <>
      <NewVersionTip />
      <ConfirmUpgrade />
      <ConfirmDowngrade />
      <AskCancelDownload />
    </>
  );
}
