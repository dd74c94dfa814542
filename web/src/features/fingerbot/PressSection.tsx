import { useState } from 'react';
import { Button, InputNumber, Radio, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { FINGERBOT_STRENGTHS, type FingerbotStrength } from '@kvm/protocol/enums';
import { FINGERBOT_PRESS_S } from '@kvm/protocol/fingerbot';
import type { I18nKey } from '../../i18n/keys';
import { saveConfig, useConfig } from '../config/config-store';
import { isValidPressTime, pressFingerbot, readPressTime, writePressTime } from './fingerbot-store';
import { useFingerbotCall } from './use-fingerbot-call';

const STRENGTH_TEXT: Record<FingerbotStrength, I18nKey> = {
  LOW: 'fingerbot.low',
  HIGH: 'fingerbot.high',
};

/** The press time (1-60 s) the field holds; a valid one is remembered in this browser. */
export function usePressTime() {
  const [pressTime, setPressTime] = useState<number | null>(readPressTime);
  const change = (value: number | null) => {
    setPressTime(value);
    if (isValidPressTime(value)) writePressTime(value);
  };
  return { pressTime, valid: isValidPressTime(pressTime), change };
}

/** The user setting fingerbot_strength (LOW until the config says). */
export function useStrength(): FingerbotStrength {
  return useConfig((s) => s.config?.fingerbot_strength) ?? 'LOW';
}

export function PressTimeField({ pressTime, valid, change }: ReturnType<typeof usePressTime>) {
  const { t } = useTranslation();
  return (
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
        status={valid ? undefined : 'error'}
        onChange={change}
        style={{ width: 160 }}
        data-testid="fingerbot-press-time"
      />
      {!valid && (
        <Typography.Text type="danger" style={{ display: 'block' }}>
          {t('fingerbot.pressTimeInvalid')}
        </Typography.Text>
      )}
    </div>
  );
}

export function StrengthField({ strength }: { strength: FingerbotStrength }) {
  const { t } = useTranslation();
  const save = useFingerbotCall();
  const change = (value: FingerbotStrength) =>
    void save.run(() => saveConfig({ fingerbot_strength: value }), {
      failure: t('common.syncFailed'),
    });
  return (
    <div>
      <Typography.Text type="secondary" style={{ display: 'block', marginBottom: 4 }}>
        {t('fingerbot.strength')}
      </Typography.Text>
      <Radio.Group
        value={strength}
        onChange={(e) => change(e.target.value as FingerbotStrength)}
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
  );
}

/** One press (SPEC 7: the call may take the press time plus 8 s). */
export function PressButton({
  pressTime,
  strength,
}: {
  pressTime: number | null;
  strength: FingerbotStrength;
}) {
  const { t } = useTranslation();
  const press = useFingerbotCall();
  const onPress = () => {
    if (!isValidPressTime(pressTime)) return;
    void press.run(() => pressFingerbot(pressTime, strength), {
      success: t('fingerbot.pressed'),
      failure: t('fingerbot.pressFailed'),
    });
  };
  return (
    <Button
      type="primary"
      block
      loading={press.busy}
      disabled={!isValidPressTime(pressTime)}
      onClick={onPress}
      data-testid="fingerbot-press"
    >
      {t('fingerbot.press')}
    </Button>
  );
}
