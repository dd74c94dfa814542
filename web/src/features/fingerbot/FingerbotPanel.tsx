import { useEffect, useRef, useState, useSyncExternalStore, type ChangeEvent } from 'react';
import {
  Button,
  Descriptions,
  Divider,
  InputNumber,
  Progress,
  Radio,
  Space,
  Typography,
} from 'antd';
import { ReloadOutlined, UploadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { FINGERBOT_STRENGTHS, type FingerbotStrength } from '@kvm/protocol/enums';
import { FINGERBOT_PRESS_S } from '@kvm/protocol/fingerbot';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { ApiError } from '../../lib/api';
import { saveConfig, useConfig } from '../config/config-store';
import { TransferError, UploadController } from '../storage/upload';
import {
  fingerbotBattery,
  fingerbotVersion,
  isValidPressTime,
  pressFingerbot,
  readPressTime,
  upgradeFingerbot,
  writePressTime,
} from './fingerbot-store';

const STRENGTH_TEXT: Record<FingerbotStrength, I18nKey> = {
  LOW: 'fingerbot.low',
  HIGH: 'fingerbot.high',
};

/** The firmware upload: kept while the panel is closed (SPEC 7: no timeout, with progress). */
const firmwareUploader = new UploadController();

function withDetail(text: string, err: unknown): string {
  const detail =
    err instanceof ApiError || err instanceof TransferError ? err.error_msg : undefined;
  return detail ? `${text}: ${detail}` : text;
}

/**
 * SPEC 2/3 fingerbot: press time (1-60 s, remembered in this browser), strength (the user
 * setting fingerbot_strength), press, battery, firmware version, firmware upload and upgrade.
 */
export default function FingerbotPanel() {
  const { t } = useTranslation();
  const message = useMessage();
  const strength = useConfig((s) => s.config?.fingerbot_strength) ?? 'LOW';
  const [pressTime, setPressTime] = useState<number | null>(readPressTime);
  const [pressing, setPressing] = useState(false);
  const [battery, setBattery] = useState<number | null>(null);
  const [version, setVersion] = useState<string | null>(null);
  const [confirmUpgrade, setConfirmUpgrade] = useState(false);
  const [upgrading, setUpgrading] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const upload = useSyncExternalStore(firmwareUploader.subscribe, firmwareUploader.getSnapshot);

  const refresh = () => {
    fingerbotBattery().then(setBattery, () => setBattery(null));
    fingerbotVersion().then(setVersion, () => setVersion(null));
  };
  useEffect(refresh, []);

  const pressTimeValid = isValidPressTime(pressTime);

  const press = async () => {
    if (!isValidPressTime(pressTime)) return;
    setPressing(true);
    try {
      await pressFingerbot(pressTime, strength);
      void message.success(t('fingerbot.pressed'));
    } catch (err) {
      void message.error(withDetail(t('fingerbot.pressFailed'), err));
    } finally {
      setPressing(false);
    }
  };

  const changeStrength = (value: FingerbotStrength) => {
    saveConfig({ fingerbot_strength: value }).catch((err: unknown) => {
      void message.error(withDetail(t('common.syncFailed'), err));
    });
  };

  const pickFirmware = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    event.target.value = ''; // The same file may be picked again after a failure.
    if (!file) return;
    if (!file.name.toLowerCase().endsWith('.zip')) {
      void message.error(t('fingerbot.wrongType'));
      return;
    }
    const form = new FormData();
    form.append('file', file, file.name);
    try {
      await firmwareUploader.send('/fingerbot/upload', form, { name: file.name, total: file.size });
      void message.success(t('fingerbot.uploaded'));
    } catch (err) {
      void message.error(withDetail(t('fingerbot.uploadFailed'), err));
    }
  };

  const upgrade = async () => {
    setConfirmUpgrade(false);
    setUpgrading(true);
    try {
      await upgradeFingerbot();
      firmwareUploader.clear();
      void message.success(t('fingerbot.upgraded'));
      refresh();
    } catch (err) {
      void message.error(withDetail(t('fingerbot.upgradeFailed'), err));
    } finally {
      setUpgrading(false);
    }
  };

  const uploading = upload.phase === 'running';
  // The package on the device is the one this console uploaded last (kept while closed).
  const uploaded = upload.phase === 'done';
  return (
    <div data-testid="fingerbot-panel">
      <Space orientation="vertical" style={{ width: '100%' }} size={12}>
        <div>
          <Typography.Text type="secondary" style={{ display: 'block', marginBottom: 4 }}>
            {t('fingerbot.pressTime')}
          </Typography.Text>
          <InputNumber
            min={FINGERBOT_PRESS_S.min}
            max={FINGERBOT_PRESS_S.max}
            step={1}
            precision={1}
            value={pressTime}
            status={pressTimeValid ? undefined : 'error'}
            onChange={(value) => {
              setPressTime(value);
              if (isValidPressTime(value)) writePressTime(value);
            }}
            style={{ width: 160 }}
            data-testid="fingerbot-press-time"
          />
          {!pressTimeValid && (
            <Typography.Text type="danger" style={{ display: 'block' }}>
              {t('fingerbot.pressTimeInvalid')}
            </Typography.Text>
          )}
        </div>
        <div>
          <Typography.Text type="secondary" style={{ display: 'block', marginBottom: 4 }}>
            {t('fingerbot.strength')}
          </Typography.Text>
          <Radio.Group
            value={strength}
            onChange={(e) => changeStrength(e.target.value as FingerbotStrength)}
            data-testid="fingerbot-strength"
            data-value={strength}
          >
            {FINGERBOT_STRENGTHS.map((value) => (
              <Radio.Button key={value} value={value} data-testid={`fingerbot-strength-${value}`}>
                {t(STRENGTH_TEXT[value])}
              </Radio.Button>
            ))}
          </Radio.Group>
        </div>
        <Button
          type="primary"
          block
          loading={pressing}
          disabled={!pressTimeValid}
          onClick={() => void press()}
          data-testid="fingerbot-press"
        >
          {t('fingerbot.press')}
        </Button>
        <Descriptions
          column={1}
          size="small"
          extra={
            <Button
              type="text"
              size="small"
              icon={<ReloadOutlined />}
              aria-label={t('fingerbot.refresh')}
              onClick={refresh}
            />
          }
          items={[
            {
              key: 'battery',
              label: t('fingerbot.battery'),
              children: (
                <span data-testid="fingerbot-battery">
                  {battery === null ? '—' : `${battery}%`}
                </span>
              ),
            },
            {
              key: 'version',
              label: t('fingerbot.version'),
              children: <span data-testid="fingerbot-version">{version ?? '—'}</span>,
            },
          ]}
        />
      </Space>
      <Divider titlePlacement="start" plain>
        {t('fingerbot.firmware')}
      </Divider>
      <Space orientation="vertical" style={{ width: '100%' }}>
        <input
          ref={fileInput}
          type="file"
          accept=".zip,application/zip"
          hidden
          onChange={(e) => void pickFirmware(e)}
          data-testid="fingerbot-upload-input"
        />
        <Button
          icon={<UploadOutlined />}
          block
          disabled={uploading || upgrading}
          onClick={() => fileInput.current?.click()}
        >
          {t('fingerbot.upload')}
        </Button>
        {upload.phase !== 'idle' && (
          <Progress
            percent={upload.percent}
            status={
              upload.phase === 'failed' || upload.phase === 'cancelled'
                ? 'exception'
                : upload.phase === 'done'
                  ? 'success'
                  : 'active'
            }
            data-testid="fingerbot-upload-progress"
          />
        )}
        <Button
          type="primary"
          danger
          block
          disabled={!uploaded || uploading}
          loading={upgrading}
          onClick={() => setConfirmUpgrade(true)}
          data-testid="fingerbot-upgrade"
        >
          {upgrading ? t('fingerbot.upgrading') : t('fingerbot.upgrade')}
        </Button>
      </Space>
      <ConfirmDialog
        open={confirmUpgrade}
        okText={t('fingerbot.upgrade')}
        onConfirm={() => void upgrade()}
        onCancel={() => setConfirmUpgrade(false)}
      >
        {t('fingerbot.upgradeConfirm')}
      </ConfirmDialog>
    </div>
  );
}
